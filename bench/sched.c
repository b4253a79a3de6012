/* sched.c - benchmark of the scheduler core (src/sched/): decisions per second and the
 * latency of one decision, at 100 and 1,000 clusters.
 *
 * Unlike the other benchmarks this one links the project library: it measures a pure
 * function, in process. Per fleet size it builds a snapshot of synthetic Clusters once
 * (10 regions, 3 zones each, 3 providers, env labels, a NoSchedule taint on every tenth
 * cluster, about twenty API kinds, a resource summary with varied free cpu, memory and
 * pods), then runs four kinds of binding against it, each in eight variants (replica
 * counts 1..50, half of them with a previous spec.clusters so steady rescheduling runs):
 *   duplicated  labelSelector affinity (env=prod), a toleration, Duplicated
 *   static      Divided, staticWeightList by region label (3 rules)
 *   dynamic     Divided, dynamicWeight AvailableReplicas, cpu/memory requirements
 *   spread      dynamic weights with region (2..3) and cluster (2..6) spread constraints
 * Each decision is timed on its own (clock_gettime around fl_sched_run, result freed
 * inside the timing).
 *
 * Baseline, from the same run and interleaved with the decisions in slices so both see
 * the same noise: the floor of any decision, one walk over the snapshot that reads what
 * the filters read of every cluster. Printed beside each figure as decision/floor.
 *
 * Targets (docs/BENCHMARKS.md): >= 20,000 bindings/s at 100 clusters, P99 <= 1 ms at
 * 1,000 clusters, single thread. Also printed: throughput with two threads sharing the
 * snapshot. Bounded: a fixed number of decisions per case, cut short after a time cap;
 * about 5-10 s in all.
 *
 *   build/bench/sched [--decisions N]     (N per case at 100 clusters, default 20000) */
#include "core/mem.h"
#include "sched/sched.h"
#include "sched/sched_priv.h"

#include <jansson.h>
#include <pthread.h>
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

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v) {
        fprintf(stderr, "bench bug: bad JSON: %s\n", e.text);
        exit(2);
    }
    return v;
}

static json_t *make_cluster(int i)
{
    char name[32], region[16], zone[24], cpu[16], mem[16], pods[16], used[16];
    snprintf(name, sizeof name, "member-%04d", i);
    snprintf(region, sizeof region, "region-%d", i % 10);
    snprintf(zone, sizeof zone, "region-%d-%c", i % 10, 'a' + (i / 10) % 3);
    snprintf(cpu, sizeof cpu, "%u", 16 + rnd() % 240);
    snprintf(mem, sizeof mem, "%uGi", 64 + rnd() % 960);
    snprintf(pods, sizeof pods, "%u", 110 * (2 + rnd() % 30));
    snprintf(used, sizeof used, "%u", rnd() % 100);
    json_t *apis = json_array();
    static const char *const gvs[][2] = {
        {"v1", "ConfigMap"}, {"v1", "Secret"}, {"v1", "Service"}, {"v1", "ServiceAccount"}, {"v1", "Pod"},
        {"v1", "PersistentVolumeClaim"}, {"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"},
        {"apps/v1", "DaemonSet"}, {"apps/v1", "ReplicaSet"}, {"batch/v1", "Job"}, {"batch/v1", "CronJob"},
        {"networking.k8s.io/v1", "Ingress"}, {"networking.k8s.io/v1", "NetworkPolicy"},
        {"policy/v1", "PodDisruptionBudget"}, {"autoscaling/v2", "HorizontalPodAutoscaler"},
        {"rbac.authorization.k8s.io/v1", "Role"}, {"rbac.authorization.k8s.io/v1", "RoleBinding"},
        {"argoproj.io/v1alpha1", "Workflow"}, {"apps.kruise.io/v1alpha1", "CloneSet"},
    };
    size_t ngv = sizeof gvs / sizeof gvs[0] - (i % 7 == 0 ? 2 : 0); /* some lack the CRDs */
    for (size_t k = 0; k < ngv; k++)
        json_array_append_new(apis, json_pack("{s:s,s:[{s:s,s:s}]}", "groupVersion", gvs[k][0], "resources", "name",
                                              "x", "kind", gvs[k][1]));
    json_t *c = json_pack(
        "{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s}},s:{s:s,s:s,s:s,s:[s],s:[]},"
        "s:{s:o,s:[{s:s,s:s}],s:{s:{s:s,s:s,s:s},s:{s:s,s:s,s:s}}}}",
        "apiVersion", "cluster.karmada.io/v1alpha1", "kind", "Cluster", "metadata", "name", name, "labels", "env",
        i % 3 ? "prod" : "dev", "topology.kubernetes.io/region", region, "tier", i % 2 ? "gold" : "silver", "spec",
        "syncMode", "Push", "provider", i % 3 == 0 ? "aws" : i % 3 == 1 ? "gcp" : "azure", "region", region,
        "zones", zone, "taints", "status", "apiEnablements", apis, "conditions", "type", "Ready", "status", "True",
        "resourceSummary", "allocatable", "cpu", cpu, "memory", mem, "pods", pods, "allocated", "cpu", "4",
        "memory", "8Gi", "pods", used);
    if (i % 10 == 9)
        json_array_append_new(json_object_get(json_object_get(c, "spec"), "taints"),
                              json_pack("{s:s,s:s}", "key", i % 20 == 19 ? "maintenance" : "dedicated", "effect",
                                        "NoSchedule"));
    return c;
}

enum { DUPLICATED, STATIC, DYNAMIC, SPREAD, NKINDS };
static const char *const kind_names[] = {"duplicated", "static weights", "dynamic weights", "spread+dynamic"};

static const char *const placements[] = {
    "{\"clusterAffinity\":{\"labelSelector\":{\"matchLabels\":{\"env\":\"prod\"}}},"
    "\"clusterTolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}",

    "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":\"Weighted\","
    "\"weightPreference\":{\"staticWeightList\":["
    "{\"targetCluster\":{\"labelSelector\":{\"matchLabels\":"
    "{\"topology.kubernetes.io/region\":\"region-1\"}}},\"weight\":3},"
    "{\"targetCluster\":{\"labelSelector\":{\"matchLabels\":"
    "{\"topology.kubernetes.io/region\":\"region-2\"}}},\"weight\":2},"
    "{\"targetCluster\":{\"clusterNames\":[\"member-0003\",\"member-0013\",\"member-0023\"]},\"weight\":1}]}}}",

    "{\"clusterAffinity\":{\"labelSelector\":{\"matchLabels\":{\"tier\":\"gold\"}}},"
    "\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":\"Weighted\","
    "\"weightPreference\":{\"dynamicWeight\":\"AvailableReplicas\"}}}",

    "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":2,\"maxGroups\":3},"
    "{\"spreadByField\":\"cluster\",\"minGroups\":2,\"maxGroups\":6}],"
    "\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":\"Weighted\","
    "\"weightPreference\":{\"dynamicWeight\":\"AvailableReplicas\"}}}",
};

#define NVARIANTS 8

static json_t *make_spec(int kind, int variant, fl_sched_snapshot *snap)
{
    json_t *s = json_pack("{s:{s:s,s:s,s:s,s:s,s:s},s:i,s:o}", "resource", "apiVersion", "apps/v1", "kind",
                          "Deployment", "namespace", "default", "name", "web", "uid", variant % 2 ? "u-1" : "u-2",
                          "replicas", 1 + variant * 7, "placement", J(placements[kind]));
    if (kind == DYNAMIC || kind == SPREAD)
        json_object_set_new(s, "replicaRequirements",
                            J("{\"resourceRequest\":{\"cpu\":\"250m\",\"memory\":\"512Mi\"}}"));
    if (variant >= NVARIANTS / 2) {
        /* a previous decision, one replica fewer: steady scale-up from there */
        json_integer_set(json_object_get(s, "replicas"), 2 + variant * 7);
        fl_sched_result *r = NULL;
        char *err = NULL;
        json_integer_set(json_object_get(s, "replicas"), 1 + variant * 7);
        if (fl_sched_run(snap, s, NULL, NULL, &r, &err) == 0 && r->outcome == FL_SCHED_SUCCESS) {
            json_t *cl = json_array();
            for (size_t i = 0; i < r->ntargets; i++)
                json_array_append_new(cl, json_pack("{s:s,s:i}", "name", r->targets[i].name, "replicas",
                                                    r->targets[i].replicas));
            json_object_set_new(s, "clusters", cl);
        }
        fl_sched_result_free(r);
        free(err);
        json_integer_set(json_object_get(s, "replicas"), 2 + variant * 7);
    }
    return s;
}

/* The floor: one pass over the snapshot reading what the filters read. */
static uint64_t walk(const fl_sched_snapshot *snap)
{
    uint64_t h = 0;
    for (size_t i = 0; i < snap->n; i++) {
        const struct fl_sched_cluster *c = &snap->clusters[i];
        h += (uintptr_t)c->name[0] + c->ntaints + (c->deleting ? 1 : 0) + (uintptr_t)c->labels + c->api[0] +
             (uint64_t)c->allowed_pods + (c->invalid ? 1 : 0) + c->nzones;
    }
    return h;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(int64_t *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return (double)v[k] / 1000.0;
}

struct stats {
    size_t n;
    double per_s, p50, p99, max;
    double floor_p50, floor_per_s;
    int failures;
};

static volatile uint64_t sink;

static void measure(fl_sched_snapshot *snap, json_t **specs, size_t count, double cap_s, struct stats *st)
{
    int64_t *lat = malloc(count * sizeof *lat), *flo = malloc(count * sizeof *flo);
    size_t n = 0, nf = 0;
    int64_t busy = 0, fbusy = 0, deadline = now_ns() + (int64_t)(cap_s * 1e9);
    const size_t slices = 4;
    st->failures = 0;
    for (size_t s = 0; s < slices && now_ns() < deadline; s++) {
        size_t end = count * (s + 1) / slices;
        for (; n < end && (n % 256 || now_ns() < deadline); n++) {
            json_t *sp = specs[n % NVARIANTS];
            fl_sched_result *r = NULL;
            char *err = NULL;
            int64_t t0 = now_ns();
            int rc = fl_sched_run(snap, sp, NULL, NULL, &r, &err);
            if (rc == 0 && r->outcome != FL_SCHED_SUCCESS)
                st->failures++;
            fl_sched_result_free(r);
            int64_t t1 = now_ns();
            if (rc != 0) {
                fprintf(stderr, "fl_sched_run: %s\n", err);
                exit(1);
            }
            lat[n] = t1 - t0;
            busy += t1 - t0;
        }
        for (; nf < n; nf++) {
            int64_t t0 = now_ns();
            sink += walk(snap);
            int64_t t1 = now_ns();
            flo[nf] = t1 - t0;
            fbusy += t1 - t0;
        }
    }
    qsort(lat, n, sizeof *lat, cmp_i64);
    qsort(flo, nf, sizeof *flo, cmp_i64);
    st->n = n;
    st->per_s = busy ? (double)n * 1e9 / (double)busy : 0;
    st->p50 = pct_us(lat, n, 50);
    st->p99 = pct_us(lat, n, 99);
    st->max = n ? (double)lat[n - 1] / 1000.0 : 0;
    st->floor_p50 = pct_us(flo, nf, 50);
    st->floor_per_s = fbusy ? (double)nf * 1e9 / (double)fbusy : 0;
    free(lat);
    free(flo);
}

struct thr {
    fl_sched_snapshot *snap;
    json_t **specs;
    size_t count;
};

static void *thr_main(void *arg)
{
    struct thr *t = arg;
    for (size_t i = 0; i < t->count; i++) {
        fl_sched_result *r = NULL;
        char *err = NULL;
        fl_sched_run(t->snap, t->specs[i % NVARIANTS], NULL, NULL, &r, &err);
        fl_sched_result_free(r);
        free(err);
    }
    return NULL;
}

/* Two threads, each with its own copies of the specs (jansson values are not shared
 * across threads), one snapshot. */
static double two_threads(fl_sched_snapshot *snap, json_t **specs, size_t count)
{
    struct thr t[2];
    json_t *copies[2][NVARIANTS];
    for (int k = 0; k < 2; k++) {
        for (int v = 0; v < NVARIANTS; v++)
            copies[k][v] = json_deep_copy(specs[v]);
        t[k] = (struct thr){snap, copies[k], count};
    }
    pthread_t th[2];
    int64_t t0 = now_ns();
    for (int k = 0; k < 2; k++)
        pthread_create(&th[k], NULL, thr_main, &t[k]);
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    int64_t dt = now_ns() - t0;
    for (int k = 0; k < 2; k++)
        for (int v = 0; v < NVARIANTS; v++)
            json_decref(copies[k][v]);
    return (double)(2 * count) * 1e9 / (double)dt;
}

int main(int argc, char **argv)
{
    fl_mem_init();
    size_t base = 20000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--decisions") && i + 1 < argc)
            base = (size_t)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--decisions N]\n", argv[0]);
            return 2;
        }
    }
    printf("scheduler core: one decision per binding on a prepared snapshot, single thread unless said\n");
    printf("floor = one walk over the snapshot per decision (same run, interleaved); ratio = decision / floor\n\n");
    printf("%-9s %-16s %11s %9s %9s %9s  %10s %8s %7s\n", "clusters", "binding", "bindings/s", "P50 us", "P99 us",
           "max us", "floor P50", "P50/flr", "2 thr/s");
    double worst100 = 1e18, worst_p99_1000 = 0;
    const char *worst100_kind = "", *worst1000_kind = "";
    int sizes[] = {100, 1000};
    for (int si = 0; si < 2; si++) {
        int n = sizes[si];
        json_t **cs = malloc((size_t)n * sizeof *cs);
        for (int i = 0; i < n; i++)
            cs[i] = make_cluster(i);
        int64_t t0 = now_ns();
        fl_sched_snapshot *snap = NULL;
        fl_sched_snapshot_new((const json_t *const *)cs, (size_t)n, &snap);
        double build_ms = (double)(now_ns() - t0) / 1e6;
        for (int i = 0; i < n; i++)
            json_decref(cs[i]);
        free(cs);
        size_t count = n == 100 ? base : base / 5;
        for (int k = 0; k < NKINDS; k++) {
            json_t *specs[NVARIANTS];
            for (int v = 0; v < NVARIANTS; v++)
                specs[v] = make_spec(k, v, snap);
            /* warm up: caches, allocator */
            struct stats st;
            measure(snap, specs, count / 10 + 1, 1.0, &st);
            measure(snap, specs, count, 5.0, &st);
            double two = two_threads(snap, specs, count / 2);
            printf("%-9d %-16s %11.0f %9.1f %9.1f %9.1f  %8.2fus %7.1fx %7.0f%s\n", n, kind_names[k], st.per_s,
                   st.p50, st.p99, st.max, st.floor_p50, st.floor_p50 > 0 ? st.p50 / st.floor_p50 : 0, two,
                   st.failures ? "  (some variants unschedulable)" : "");
            if (n == 100 && st.per_s < worst100) {
                worst100 = st.per_s;
                worst100_kind = kind_names[k];
            }
            if (n == 1000 && st.p99 > worst_p99_1000) {
                worst_p99_1000 = st.p99;
                worst1000_kind = kind_names[k];
            }
            for (int v = 0; v < NVARIANTS; v++)
                json_decref(specs[v]);
        }
        printf("%-9d snapshot build %.1f ms (once per change of the cluster set)\n", n, build_ms);
        fl_sched_snapshot_free(snap);
    }
    printf("\ntarget >= 20000 bindings/s at 100 clusters: %s (slowest: %s, %.0f/s)\n",
           worst100 >= 20000 ? "met" : "NOT met", worst100_kind, worst100);
    printf("target P99 <= 1 ms at 1000 clusters: %s (slowest: %s, P99 %.1f us)\n",
           worst_p99_1000 <= 1000 ? "met" : "NOT met", worst1000_kind, worst_p99_1000);
    return (int)(sink & 0);
}
