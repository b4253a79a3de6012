/* authz.c - what RBAC authorization costs a request (issue 41): in process, an API over a
 * memory store with the default roles plus 200 ClusterRoles and 1,000 RoleBindings spread
 * over 100 namespaces, as the server holds them.
 *
 * Three measures, each side by side with the same work done as system:masters (which the
 * authorizer lets through before RBAC, as kube-apiserver's privileged group):
 *   decision   fl_auth_allowed alone, for a user allowed by a RoleBinding of `edit`, and the
 *              same user denied in another namespace (every grant of the user and its groups
 *              tried: the worst case);
 *   request    fl_api_handle of GET /api/v1/namespaces/team-0/configmaps/c (a whole request
 *              in process: routing, authorization, the read, the JSON answer);
 *   rebuild    the first decision after an RBAC write: the index read again from the store.
 * ns/op is the mean over the iterations of one thread; `threads` runs the decision on
 * that many threads at once (the index is read under a read lock).
 *
 * Usage: authz [--iterations N] [--threads T] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/rbac.h"
#include "core/mem.h"
#include "store/store.h"

#define CLUSTER_ROLES 200
#define ROLE_BINDINGS 1000
#define NAMESPACES 100

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int request(fl_api *api, const fl_identity *who, const char *method, const char *path, const char *body)
{
    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = method;
    r.path = path;
    r.who = who;
    r.content_type = body ? "application/json" : NULL;
    r.body = body;
    r.body_len = body ? strlen(body) : 0;
    fl_api_handle(api, &r);
    free(r.resp);
    free(r.warnings);
    fl_api_stream_free(r.stream);
    return r.code;
}

static void must(int code, int want, const char *what)
{
    if (code != want) {
        fprintf(stderr, "authz: %s: %d, want %d\n", what, code, want);
        exit(1);
    }
}

static void populate(fl_api *api)
{
    char path[256], body[1024];
    for (int i = 0; i < NAMESPACES; i++) {
        snprintf(path, sizeof path, "team-%d", i);
        must(fl_api_ensure_namespace(api, path), 0, "namespace");
    }
    for (int i = 0; i < CLUSTER_ROLES; i++) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":"
                 "\"cr-%d\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"services\"],\"verbs\":[\"get\","
                 "\"list\"]},{\"apiGroups\":[\"apps\"],\"resources\":[\"deployments\"],\"verbs\":[\"get\"]},"
                 "{\"apiGroups\":[\"batch\"],\"resources\":[\"jobs\"],\"verbs\":[\"*\"]},{\"apiGroups\":[\"\"],"
                 "\"resources\":[\"secrets\"],\"resourceNames\":[\"s-%d\"],\"verbs\":[\"get\"]}]}",
                 i, i);
        must(request(api, NULL, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", body), 201, "clusterrole");
    }
    for (int i = 0; i < ROLE_BINDINGS; i++) {
        /* users u-N in groups g-(N%50): every binding names a user or a group */
        snprintf(path, sizeof path, "/apis/rbac.authorization.k8s.io/v1/namespaces/team-%d/rolebindings",
                 i % NAMESPACES);
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":{\"name\":"
                 "\"rb-%d\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
                 "\"name\":\"cr-%d\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"%s\","
                 "\"name\":\"%s-%d\"}]}",
                 i, i % CLUSTER_ROLES, i % 2 ? "Group" : "User", i % 2 ? "g" : "u", i % 2 ? i % 50 : i);
        must(request(api, NULL, "POST", path, body), 201, "rolebinding");
    }
    /* alice, in group g-1 (so holding its 10 bindings too), edits team-0 */
    must(request(api, NULL, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-0/rolebindings",
                 "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":{\"name\":"
                 "\"alice\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
                 "\"name\":\"edit\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"User\","
                 "\"name\":\"alice\"}]}"),
         201, "alice's binding");
    must(request(api, NULL, "POST", "/api/v1/namespaces/team-0/configmaps",
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},\"data\":{\"k\":\"v\"}}"),
         201, "configmap");
}

typedef struct decide_arg {
    fl_auth *auth;
    const fl_auth_attrs *at;
    long n;
    bool want;
} decide_arg;

static void *decide_loop(void *p)
{
    decide_arg *d = p;
    for (long i = 0; i < d->n; i++)
        if (fl_auth_allowed(d->auth, d->at) != d->want) {
            fprintf(stderr, "authz: wrong decision\n");
            exit(1);
        }
    return NULL;
}

/* ns per decision with `threads` threads each doing n. */
static double time_decisions(fl_auth *auth, const fl_auth_attrs *at, bool want, long n, int threads)
{
    pthread_t t[64];
    decide_arg d = {auth, at, n, want};
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, decide_loop, &d);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return (now_s() - t0) * 1e9 / (double)n;
}

static double time_requests(fl_api *api, const fl_identity *who, long n)
{
    double t0 = now_s();
    for (long i = 0; i < n; i++)
        must(request(api, who, "GET", "/api/v1/namespaces/team-0/configmaps/c", NULL), 200, "get");
    return (now_s() - t0) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
    long iters = 200000;
    int threads = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iterations"))
            iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
    }
    if (iters < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: authz [--iterations N] [--threads 1..64]\n");
        return 2;
    }
    fl_mem_init();
    fl_store *store = NULL;
    fl_store_config sc = {.memory = true};
    if (fl_store_open(&sc, &store) != 0)
        return 1;
    fl_api api;
    memset(&api, 0, sizeof api);
    api.store = store;
    api.bookmark_interval_ms = 60000;
    fl_auth *auth = NULL;
    fl_auth_new(&api, NULL, NULL, &auth);
    api.auth = auth;
    fl_auth_load(auth); /* the default roles */
    double t0 = now_s();
    populate(&api);
    double populate_s = now_s() - t0;

    fl_identity alice, admin;
    fl_identity_set(&alice, "alice", NULL);
    fl_identity_add_group(&alice, "g-1");
    fl_identity_add_group(&alice, FL_AUTH_GROUP_AUTHENTICATED);
    fl_identity_set(&admin, "admin", NULL);
    fl_identity_add_group(&admin, FL_AUTH_GROUP_MASTERS);
    fl_identity_add_group(&admin, FL_AUTH_GROUP_AUTHENTICATED);
    fl_auth_attrs allow = {.who = &alice, .verb = "get", .path = NULL, .group = "", .resource = "configmaps",
                           .subresource = "", .ns = "team-0", .name = "c"};
    fl_auth_attrs deny = allow;
    deny.ns = "team-99";
    fl_auth_attrs as_admin = allow;
    as_admin.who = &admin;

    /* the rebuild: the first decision after a write to an RBAC object */
    t0 = now_s();
    fl_auth_allowed(auth, &allow);
    double first_ms = (now_s() - t0) * 1e3;
    double rebuild_ms = 0;
    for (int i = 0; i < 5; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":"
                 "\"extra-%d\"},\"rules\":[]}",
                 i);
        must(request(&api, NULL, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", body), 201, "extra");
        t0 = now_s();
        fl_auth_allowed(auth, &allow);
        rebuild_ms += (now_s() - t0) * 1e3 / 5;
    }

    long rq = iters / 4 > 0 ? iters / 4 : 1;
    double d_allow = time_decisions(auth, &allow, true, iters, 1);
    double d_deny = time_decisions(auth, &deny, false, iters, 1);
    double d_admin = time_decisions(auth, &as_admin, true, iters, 1);
    double d_allow_t = time_decisions(auth, &allow, true, iters, threads);
    double d_admin_t = time_decisions(auth, &as_admin, true, iters, threads);
    double r_alice = time_requests(&api, &alice, rq);
    double r_admin = time_requests(&api, &admin, rq);

    printf("authz: %d ClusterRoles + %d RoleBindings in %d namespaces (+ the defaults); populated in %.1f s\n",
           CLUSTER_ROLES, ROLE_BINDINGS, NAMESPACES, populate_s);
    printf("index build: first %.2f ms, after one RBAC write %.2f ms (mean of 5)\n", first_ms, rebuild_ms);
    printf("%-44s %12s %12s %8s\n", "measure (ns/op, 1 thread unless said)", "RBAC user", "masters", "ratio");
    printf("%-44s %12.0f %12.0f %8.2f\n", "decision, allowed by a RoleBinding", d_allow, d_admin, d_allow / d_admin);
    printf("%-44s %12.0f %12.0f %8.2f\n", "decision, denied (all grants tried)", d_deny, d_admin, d_deny / d_admin);
    char label[64];
    snprintf(label, sizeof label, "decision, allowed, %d threads (per thread)", threads);
    printf("%-44s %12.0f %12.0f %8.2f\n", label, d_allow_t, d_admin_t, d_allow_t / d_admin_t);
    printf("%-44s %12.0f %12.0f %8.2f\n", "GET configmap in process (whole request)", r_alice, r_admin,
           r_alice / r_admin);
    printf("builds of the index during the run: %lu\n", fl_rbac_builds(fl_auth_rbac(auth)));
    fl_auth_free(auth);
    fl_store_free(store);
    return 0;
}
