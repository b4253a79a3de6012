/* rollout.c - a staged rollout against a plain propagation of the same change, same run.
 *
 *   rollout [--clusters 100] [--rounds 3] [--flotilla PATH] [--keep]
 *
 * Starts `flotilla server` and `flotilla member --clusters N`, joins them (Push), and
 * propagates two Deployments to every cluster (Duplicated), each with its own policy:
 * "plain" as ever, "staged" under a RolloutStrategy of three stages (10%, 30%, 60% of the
 * clusters, zero soak, no approval). Each round changes the image of one, then of the other,
 * and measures from the template's update to the moment every cluster's Work carries the new
 * generation, applied, with the object's live state Current (one list of the template's Works
 * every 20 ms; the same criterion for both, read from the Works, not from the strategy).
 * Printed: both times per round, their P50 over rounds and the ratio. Target (issue 42):
 * staged <= 3x plain plus the configured waits (none here). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

static const char *const DEPLOY =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
    "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},\"template\":{\"metadata\":"
    "{\"labels\":{\"app\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx:1.0\"}]}}}}";
static const char *const POLICY =
    "{\"apiVersion\":\"policy.karmada.io/v1alpha1\",\"kind\":\"PropagationPolicy\",\"metadata\":{\"name\":\"%s\","
    "\"namespace\":\"default\"},\"spec\":{\"resourceSelectors\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
    "\"name\":\"%s\"}],\"placement\":{\"clusterAffinity\":{\"labelSelector\":{}},\"replicaScheduling\":"
    "{\"replicaSchedulingType\":\"Duplicated\"}}}}";
static const char *const STRATEGY =
    "{\"apiVersion\":\"apps.flotilla.io/v1alpha1\",\"kind\":\"RolloutStrategy\",\"metadata\":{\"name\":\"staged\","
    "\"namespace\":\"default\"},\"spec\":{\"policyRef\":{\"kind\":\"PropagationPolicy\",\"name\":\"staged\"},"
    "\"stages\":[{\"name\":\"one\",\"percent\":10},{\"name\":\"two\",\"percent\":30},{\"name\":\"three\","
    "\"percent\":60}],\"progressDeadlineSeconds\":120}}";

static int create(CURL *c, const fb_server *s, const char *path, const char *fmt, const char *name, fb_buf *out)
{
    char body[2048];
    snprintf(body, sizeof body, fmt, name, name, name);
    long code = fb_request(c, s, "POST", path, body, strlen(body), out);
    if (code != 201) {
        fprintf(stderr, "SERVER PROBLEM: POST %s: %ld %.300s\n", path, code, out->p);
        return 1;
    }
    return 0;
}

/* Change the Deployment's image to image; its new generation, or -1. */
static long long set_image(CURL *c, const fb_server *s, const char *name, const char *image, fb_buf *out)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/apps/v1/namespaces/default/deployments/%s", name);
    if (fb_request(c, s, "GET", path, NULL, 0, out) != 200)
        return -1;
    json_t *d = json_loads(out->p, 0, NULL);
    json_t *cts = json_object_get(json_object_get(json_object_get(json_object_get(d, "spec"), "template"), "spec"),
                                  "containers");
    json_object_set_new(json_array_get(cts, 0), "image", json_string(image));
    json_object_del(d, "status");
    char *body = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    long code = fb_request(c, s, "PUT", path, body, strlen(body), out);
    free(body);
    if (code != 200)
        return -1;
    d = json_loads(out->p, 0, NULL);
    long long gen = json_integer_value(json_object_get(json_object_get(d, "metadata"), "generation"));
    json_decref(d);
    return gen;
}

/* How many of the template's Works carry generation gen, applied, Current. */
static int current_works(CURL *c, const fb_server *s, const char *name, long long gen, fb_buf *out)
{
    char path[512];
    snprintf(path, sizeof path, "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/%s-deployment",
             name);
    if (fb_request(c, s, "GET", path, NULL, 0, out) != 200)
        return -1;
    json_t *b = json_loads(out->p, 0, NULL);
    const char *id = json_string_value(json_object_get(json_object_get(json_object_get(b, "metadata"), "labels"),
                                                       "resourcebinding.karmada.io/permanent-id"));
    snprintf(path, sizeof path,
             "/apis/work.karmada.io/v1alpha1/works?labelSelector=resourcebinding.karmada.io%%2Fpermanent-id%%3D%s",
             id ? id : "none");
    json_decref(b);
    if (fb_request(c, s, "GET", path, NULL, 0, out) != 200)
        return -1;
    json_t *l = json_loads(out->p, 0, NULL);
    int n = 0;
    size_t i;
    json_t *w;
    char want[32];
    snprintf(want, sizeof want, "%lld", gen);
    json_array_foreach(json_object_get(l, "items"), i, w) {
        json_t *spec = json_object_get(w, "spec"), *st = json_object_get(w, "status");
        json_t *m = json_array_get(json_object_get(json_object_get(spec, "workload"), "manifests"), 0);
        const char *g = json_string_value(json_object_get(
            json_object_get(json_object_get(m, "metadata"), "annotations"), "resourcetemplate.karmada.io/generation"));
        if (!g || strcmp(g, want) || json_is_true(json_object_get(spec, "suspendDispatching")))
            continue;
        json_int_t wgen = json_integer_value(json_object_get(json_object_get(w, "metadata"), "generation"));
        bool applied = false;
        size_t k;
        json_t *cond;
        json_array_foreach(json_object_get(st, "conditions"), k, cond) {
            const char *t = json_string_value(json_object_get(cond, "type")),
                       *cs = json_string_value(json_object_get(cond, "status"));
            if (t && !strcmp(t, "Applied") && cs && !strcmp(cs, "True") &&
                json_integer_value(json_object_get(cond, "observedGeneration")) == wgen)
                applied = true;
        }
        const char *live = json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(st, "manifestStatuses"), 0), "liveStatus"), "state"));
        n += applied && live && !strcmp(live, "Current");
    }
    json_decref(l);
    return n;
}

/* ms from now until every cluster's Work is Current at gen (-1: not within 300 s). */
static double wait_current(CURL *c, const fb_server *s, const char *name, long long gen, int clusters, int64_t t0,
                           fb_buf *out)
{
    for (int i = 0; i < 15000; i++) {
        if (current_works(c, s, name, gen, out) >= clusters)
            return (double)(fb_now_ns() - t0) / 1e6;
        usleep(20000);
    }
    return -1;
}

int main(int argc, char **argv)
{
    int clusters = 100, rounds = 3;
    bool keep = false;
    const char *flotilla_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--clusters") && i + 1 < argc)
            clusters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep"))
            keep = true;
        else if (!strcmp(argv[i], "--flotilla") && i + 1 < argc)
            flotilla_arg = argv[++i];
        else {
            fprintf(stderr, "usage: rollout [--clusters N] [--rounds R] [--flotilla PATH] [--keep]\n");
            return 2;
        }
    }
    if (clusters < 10 || rounds < 1 || rounds > 50)
        return 2;
    fb_raise_nofile();
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *root = fb_mkdtemp(NULL, "fl-bench-rollout");
    char sdir[600], mdir[600];
    snprintf(sdir, sizeof sdir, "%s/server", root);
    snprintf(mdir, sizeof mdir, "%s/members", root);
    int problems = 0;
    fb_server s;
    if (fb_server_start(flotilla, sdir, NULL, &s))
        return 1;
    fb_member_host mh;
    if (fb_member_start(flotilla, mdir, clusters, &mh)) {
        fb_server_stop(&s);
        return 1;
    }
    struct curl_slist *h = fb_headers(&s);
    CURL *c = fb_curl_new(&s, h);
    fb_buf out = {0};
    pid_t *agents = NULL;
    problems += fb_join(flotilla, c, &s, &mh, mdir, clusters, false, root, &agents);
    int ready = fb_wait_ready(c, &s, clusters, 300);
    printf("%d clusters (push) Ready: %d\n", clusters, ready);
    if (ready < clusters)
        problems++;
    static const char *const names[] = {"plain", "staged"};
    for (int k = 0; k < 2 && !problems; k++) {
        problems += create(c, &s, "/apis/apps/v1/namespaces/default/deployments", DEPLOY, names[k], &out);
        problems += create(c, &s, "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", POLICY,
                           names[k], &out);
    }
    for (int k = 0; k < 2 && !problems; k++)
        if (wait_current(c, &s, names[k], 1, clusters, fb_now_ns(), &out) < 0) {
            fprintf(stderr, "SERVER PROBLEM: %s not Current on every cluster\n", names[k]);
            problems++;
        }
    if (!problems && fb_request(c, &s, "POST", "/apis/apps.flotilla.io/v1alpha1/namespaces/default/rolloutstrategies",
                                STRATEGY, strlen(STRATEGY), &out) != 201) {
        fprintf(stderr, "SERVER PROBLEM: creating the strategy: %.300s\n", out.p);
        problems++;
    }
    sleep(1); /* the strategy takes the delivered template over */
    int64_t *plain = calloc((size_t)rounds, sizeof *plain), *staged = calloc((size_t)rounds, sizeof *staged);
    for (int r = 0; r < rounds && !problems; r++) {
        char image[32];
        snprintf(image, sizeof image, "nginx:1.%d", r + 1);
        for (int k = 0; k < 2; k++) {
            int64_t t0 = fb_now_ns();
            long long gen = set_image(c, &s, names[k], image, &out);
            double ms = gen > 0 ? wait_current(c, &s, names[k], gen, clusters, t0, &out) : -1;
            if (ms < 0) {
                fprintf(stderr, "PROBLEM: round %d: %s not Current everywhere\n", r, names[k]);
                problems++;
                break;
            }
            (k ? staged : plain)[r] = (int64_t)(ms * 1e6);
            printf("round %d: %s %.0f ms\n", r, names[k], ms);
        }
    }
    if (!problems) {
        double p = fb_pct_ms(plain, (size_t)rounds, 50), st = fb_pct_ms(staged, (size_t)rounds, 50);
        printf("plain propagation of an image change to %d clusters: P50 %.0f ms over %d rounds\n", clusters, p, rounds);
        printf("3-stage rollout (10%%/30%%/60%%, zero soak) of the same change: P50 %.0f ms (x%.2f the plain "
               "propagation)\n", st, p > 0 ? st / p : 0);
        printf("target <= 3x: %s\n", p > 0 && st <= 3 * p ? "met" : "NOT met");
    }
    free(plain);
    free(staged);
    free(out.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    fb_agents_stop(agents, clusters);
    fb_member_stop(&mh);
    if (fb_server_stop(&s) != 0)
        problems++;
    fb_scratch_done(root, keep);
    return problems ? 1 : 0;
}
