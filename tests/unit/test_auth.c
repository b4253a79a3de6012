/* test_auth.c - the token table, the authorizer and registration (src/api/auth.c).
 *
 * The authorizer is pinned by a decision table (user, verb, resource, namespace, name ->
 * allowed?). The token table is driven through an API instance over a memory store, the
 * way the server uses it: registration issues a token, re-registration rotates it, a new
 * table loaded from the store (a restart) keeps it, and deleting the Cluster or the Secret,
 * or replacing the Cluster, revokes it. Requests go through fl_api_handle with fl_req.user
 * set, as http.c sets it after authentication. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

#include "testapi.h"

#define ADMIN_TOKEN "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0"
#define BOOT_TOKEN "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"
#define AGENT_M1 FL_AUTH_AGENT_PREFIX "m1"

/* ---------- the decision table ---------- */

typedef struct decision {
    const char *user, *verb, *group, *resource, *sub, *ns, *name;
    bool allowed;
} decision;

static const decision decisions[] = {
    /* admin: everything */
    {FL_AUTH_ADMIN, "delete", "", "secrets", "", "kube-system", "x", true},
    {FL_AUTH_ADMIN, "list", "", "secrets", "", "", "", true},
    /* bootstrap: no resources at all */
    {FL_AUTH_BOOTSTRAP, "list", "", "configmaps", "", "default", "", false},
    {FL_AUTH_BOOTSTRAP, "get", "cluster.karmada.io", "clusters", "", "", "m1", false},
    {FL_AUTH_BOOTSTRAP, "create", "cluster.karmada.io", "clusters", "", "", "m1", false},
    /* the metrics reader: no resources */
    {FL_AUTH_METRICS_READER, "list", "", "namespaces", "", "", "", false},
    {FL_AUTH_METRICS_READER, "get", "", "secrets", "", "karmada-cluster", "m1-agent-token", false},
    {FL_AUTH_METRICS_READER, "list", "cluster.karmada.io", "clusters", "", "", "", false},
    /* its own Cluster */
    {AGENT_M1, "get", "cluster.karmada.io", "clusters", "", "", "m1", true},
    {AGENT_M1, "watch", "cluster.karmada.io", "clusters", "", "", "m1", true},
    {AGENT_M1, "list", "cluster.karmada.io", "clusters", "", "", "m1", true},
    {AGENT_M1, "update", "cluster.karmada.io", "clusters", "", "", "m1", false}, /* spec is read-only */
    {AGENT_M1, "patch", "cluster.karmada.io", "clusters", "", "", "m1", false},
    {AGENT_M1, "update", "cluster.karmada.io", "clusters", "status", "", "m1", true},
    {AGENT_M1, "patch", "cluster.karmada.io", "clusters", "status", "", "m1", true},
    {AGENT_M1, "get", "cluster.karmada.io", "clusters", "status", "", "m1", true},
    {AGENT_M1, "delete", "cluster.karmada.io", "clusters", "", "", "m1", false},
    {AGENT_M1, "create", "cluster.karmada.io", "clusters", "", "", "m1", false},
    {AGENT_M1, "list", "cluster.karmada.io", "clusters", "", "", "", false},
    {AGENT_M1, "get", "cluster.karmada.io", "clusters", "", "", "m2", false},
    {AGENT_M1, "update", "cluster.karmada.io", "clusters", "status", "", "m2", false},
    {AGENT_M1, "get", "cluster.karmada.io", "clusters", "", "", "m10", false},
    /* its own Lease */
    {AGENT_M1, "create", "coordination.k8s.io", "leases", "", "karmada-cluster", "m1", true},
    {AGENT_M1, "get", "coordination.k8s.io", "leases", "", "karmada-cluster", "m1", true},
    {AGENT_M1, "update", "coordination.k8s.io", "leases", "", "karmada-cluster", "m1", true},
    {AGENT_M1, "patch", "coordination.k8s.io", "leases", "", "karmada-cluster", "m1", true},
    {AGENT_M1, "watch", "coordination.k8s.io", "leases", "", "karmada-cluster", "m1", true},
    {AGENT_M1, "create", "coordination.k8s.io", "leases", "", "karmada-cluster", "m2", false},
    {AGENT_M1, "create", "coordination.k8s.io", "leases", "", "karmada-cluster", "", false},
    {AGENT_M1, "update", "coordination.k8s.io", "leases", "", "karmada-cluster", "m2", false},
    {AGENT_M1, "delete", "coordination.k8s.io", "leases", "", "karmada-cluster", "m1", false},
    {AGENT_M1, "list", "coordination.k8s.io", "leases", "", "karmada-cluster", "", false},
    {AGENT_M1, "get", "coordination.k8s.io", "leases", "", "kube-node-lease", "m1", false},
    /* its execution namespace */
    {AGENT_M1, "get", "", "namespaces", "", "karmada-es-m1", "karmada-es-m1", true},
    {AGENT_M1, "delete", "", "namespaces", "", "karmada-es-m1", "karmada-es-m1", false},
    {AGENT_M1, "get", "", "namespaces", "", "karmada-es-m2", "karmada-es-m2", false},
    {AGENT_M1, "list", "", "namespaces", "", "", "", false},
    {AGENT_M1, "list", "work.karmada.io", "works", "", "karmada-es-m1", "", true},
    {AGENT_M1, "watch", "work.karmada.io", "works", "", "karmada-es-m1", "", true},
    {AGENT_M1, "get", "work.karmada.io", "works", "", "karmada-es-m1", "w", true},
    {AGENT_M1, "update", "work.karmada.io", "works", "", "karmada-es-m1", "w", true},
    {AGENT_M1, "patch", "work.karmada.io", "works", "", "karmada-es-m1", "w", true},
    {AGENT_M1, "update", "work.karmada.io", "works", "status", "karmada-es-m1", "w", true},
    {AGENT_M1, "patch", "work.karmada.io", "works", "status", "karmada-es-m1", "w", true},
    {AGENT_M1, "create", "work.karmada.io", "works", "", "karmada-es-m1", "w", false},
    {AGENT_M1, "delete", "work.karmada.io", "works", "", "karmada-es-m1", "w", false},
    {AGENT_M1, "deletecollection", "work.karmada.io", "works", "", "karmada-es-m1", "", false},
    {AGENT_M1, "list", "work.karmada.io", "works", "", "karmada-es-m2", "", false},
    {AGENT_M1, "list", "work.karmada.io", "works", "", "", "", false},
    {AGENT_M1, "update", "work.karmada.io", "works", "status", "karmada-es-m2", "w", false},
    {AGENT_M1, "create", "", "events", "", "karmada-es-m1", "", true},
    {AGENT_M1, "patch", "events.k8s.io", "events", "", "karmada-es-m1", "e", true},
    {AGENT_M1, "create", "", "events", "", "karmada-es-m2", "", false},
    {AGENT_M1, "get", "", "secrets", "", "karmada-es-m1", "s", false},
    {AGENT_M1, "list", "", "configmaps", "", "karmada-es-m1", "", false},
    {AGENT_M1, "get", "", "secrets", "", "karmada-cluster", "m1-agent-token", false},
    {AGENT_M1, "list", "", "configmaps", "", "default", "", false},
    {AGENT_M1, "list", "policy.karmada.io", "propagationpolicies", "", "default", "", false},
    /* another agent's */
    {FL_AUTH_AGENT_PREFIX "m2", "list", "work.karmada.io", "works", "", "karmada-es-m2", "", true},
    {FL_AUTH_AGENT_PREFIX "m2", "list", "work.karmada.io", "works", "", "karmada-es-m1", "", false},
    /* an agent of no cluster, and anonymous */
    {FL_AUTH_AGENT_PREFIX, "list", "work.karmada.io", "works", "", "karmada-es-", "", false},
    {FL_AUTH_ANONYMOUS, "get", "cluster.karmada.io", "clusters", "", "", "m1", false},
};

/* The identity the server gives user (its groups as fl_auth_authenticate gives them); NULL for
 * NULL (a trusted in-process caller). */
static const fl_identity *ident_of(const char *user, fl_identity *id)
{
    if (!user)
        return NULL;
    if (!strcmp(user, FL_AUTH_ANONYMOUS)) {
        fl_identity_anonymous(id);
        return id;
    }
    assert_int_equal(fl_identity_set(id, user, NULL), 0);
    if (!strcmp(user, FL_AUTH_ADMIN))
        fl_identity_add_group(id, FL_AUTH_GROUP_MASTERS);
    else if (!strcmp(user, FL_AUTH_BOOTSTRAP))
        fl_identity_add_group(id, FL_AUTH_GROUP_BOOTSTRAPPERS);
    else if (!strncmp(user, FL_AUTH_AGENT_PREFIX, strlen(FL_AUTH_AGENT_PREFIX)))
        fl_identity_add_group(id, FL_AUTH_GROUP_AGENTS);
    fl_identity_add_group(id, FL_AUTH_GROUP_AUTHENTICATED);
    return id;
}

/* ---------- an API over a memory store, with a token table ---------- */

typedef struct fixture {
    fl_store *store;
    fl_api api;
    fl_auth *auth;
} fixture;

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof *f);
    f->store = test_api_open_memory(&f->api, "default");
    fl_auth_new(&f->api, ADMIN_TOKEN, BOOT_TOKEN, &f->auth);
    f->api.auth = f->auth;
    assert_int_equal(fl_auth_load(f->auth), 0); /* no agents yet; the default RBAC objects */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_auth_free(f->auth);
    fl_store_free(f->store);
    free(f);
    return 0;
}

/* One request as `user` (NULL: in-process). Returns the code; *out (may be NULL) the body. */
static int call_as(fixture *f, const char *user, const char *method, const char *path, const char *query_fs,
                   const char *body, json_t **out)
{
    fl_req r;
    memset(&r, 0, sizeof r);
    fl_kvpair q = {(char *)"fieldSelector", (char *)query_fs};
    if (query_fs) {
        r.query = &q;
        r.nquery = 1;
    }
    r.method = method;
    r.path = path;
    fl_identity id;
    r.who = ident_of(user, &id);
    r.content_type = !body ? NULL : !strcmp(method, "PATCH") ? "application/merge-patch+json" : "application/json";
    r.body = body;
    r.body_len = body ? strlen(body) : 0;
    fl_api_handle(&f->api, &r);
    if (out)
        *out = r.resp ? fl_json_load(r.resp, r.resp_len) : NULL;
    free(r.resp);
    free(r.warnings);
    fl_api_stream_free(r.stream);
    return r.code;
}

/* Register cluster as user; returns the code and copies the token (if 201) into token. */
static int do_register(fixture *f, const char *user, const char *cluster, char token[128])
{
    char *body = fl_asprintf("{\"clusterName\":\"%s\"}", cluster);
    json_t *resp = NULL;
    int code = call_as(f, user, "POST", FL_AUTH_REGISTER_PATH, NULL, body, &resp);
    free(body);
    if (token) {
        const char *t = json_string_value(json_object_get(resp, "token"));
        snprintf(token, 128, "%s", code == 201 && t ? t : "");
    }
    json_decref(resp);
    return code;
}

static bool authenticates_as(fixture *f, const char *token, const char *want)
{
    fl_identity who;
    int rc = fl_auth_authenticate(f->auth, token, &who);
    if (!want)
        return rc == FL_ENOTFOUND && !who.user[0] && !who.ngroups;
    return rc == 0 && !strcmp(who.user, want) && fl_identity_in_group(&who, FL_AUTH_GROUP_AUTHENTICATED);
}

static void test_admin_and_bootstrap_tokens_name_their_identities(void **state)
{
    fixture *f = *state;
    assert_true(authenticates_as(f, ADMIN_TOKEN, FL_AUTH_ADMIN));
    assert_true(authenticates_as(f, BOOT_TOKEN, FL_AUTH_BOOTSTRAP));
    assert_true(authenticates_as(f, "c0ffee", NULL));
    assert_true(authenticates_as(f, "", NULL));
    assert_true(authenticates_as(f, NULL, NULL));
    assert_true(authenticates_as(f, "5ca1ab1e", NULL));
    fl_auth_set_metrics_reader(f->auth, "5ca1ab1e");
    assert_true(authenticates_as(f, "5ca1ab1e", FL_AUTH_METRICS_READER));
    assert_true(authenticates_as(f, ADMIN_TOKEN, FL_AUTH_ADMIN));
    fl_identity who;
    assert_int_equal(fl_auth_authenticate(f->auth, ADMIN_TOKEN, &who), 0);
    assert_true(fl_identity_in_group(&who, FL_AUTH_GROUP_MASTERS));
    assert_int_equal(fl_auth_authenticate(f->auth, BOOT_TOKEN, &who), 0);
    assert_false(fl_identity_in_group(&who, FL_AUTH_GROUP_MASTERS));
    assert_true(fl_identity_in_group(&who, FL_AUTH_GROUP_BOOTSTRAPPERS));
}

/* Write text to a fresh file; returns its path (static buffer). */
static const char *token_file(const char *text)
{
    static char path[] = "/tmp/fl-test-tokens-XXXXXX";
    snprintf(path, sizeof path, "/tmp/fl-test-tokens-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_token_file_names_users_and_groups(void **state)
{
    fixture *f = *state;
    char *err = NULL;
    const char *path = token_file("# a comment\n"
                                  "\n"
                                  "t-alice,alice,1001,\"team-a,dev\"\n"
                                  "t-bob,bob,1002\r\n"
                                  "t-root,root,,system:masters\n");
    assert_int_equal(fl_auth_load_token_file(f->auth, path, &err), 3);
    assert_null(err);
    unlink(path);
    fl_identity who;
    assert_int_equal(fl_auth_authenticate(f->auth, "t-alice", &who), 0);
    assert_string_equal(who.user, "alice");
    assert_string_equal(who.uid, "1001");
    assert_int_equal(who.ngroups, 3);
    assert_string_equal(who.groups[0], "team-a");
    assert_string_equal(who.groups[1], "dev");
    assert_string_equal(who.groups[2], FL_AUTH_GROUP_AUTHENTICATED);
    assert_int_equal(fl_auth_authenticate(f->auth, "t-bob", &who), 0);
    assert_string_equal(who.user, "bob");
    assert_int_equal(who.ngroups, 1);
    assert_true(authenticates_as(f, "t-carol", NULL));
    /* a file user holds nothing but what its groups give: alice no resources, root all */
    fl_auth_attrs at = {.verb = "get", .group = "", .resource = "secrets", .subresource = "", .ns = "default",
                        .name = "s"};
    assert_int_equal(fl_auth_authenticate(f->auth, "t-alice", &who), 0);
    at.who = &who;
    assert_false(fl_auth_allowed(f->auth, &at));
    assert_int_equal(fl_auth_authenticate(f->auth, "t-root", &who), 0);
    assert_true(fl_auth_allowed(f->auth, &at));
    /* the admin token still works beside them */
    assert_true(authenticates_as(f, ADMIN_TOKEN, FL_AUTH_ADMIN));
}

static void test_token_file_refuses_bad_lines_and_loads_nothing(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *text, *want;
    } rows[] = {
        {"t1,u1,1\nt2\n", "line 2"},
        {"t1,,1\n", "line 1"},
        {",u1,1\n", "line 1"},
        {"t1,u1,1,\"g1,g2\n", "line 1"},
        {"t1,u1,1,\"g\"x\n", "line 1"},
        {"t1,u1,1,g,extra\n", "line 1"},
        {"ok,u,1\nt1,u1,1,\"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\"\n", "line 2"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char *err = NULL;
        const char *path = token_file(rows[i].text);
        assert_int_equal(fl_auth_load_token_file(f->auth, path, &err), FL_EINVAL);
        unlink(path);
        if (!err || !strstr(err, rows[i].want) || !strstr(err, "--token-auth-file"))
            fail_msg("row %zu: error %s, want it to name %s", i, err ? err : "(none)", rows[i].want);
        free(err);
        assert_true(authenticates_as(f, "t1", NULL));
        assert_true(authenticates_as(f, "ok", NULL));
    }
    char *err = NULL;
    assert_int_equal(fl_auth_load_token_file(f->auth, "/nonexistent/tokens.csv", &err), FL_EINVAL);
    assert_non_null(strstr(err, "/nonexistent/tokens.csv"));
    free(err);
}

static void test_register_creates_pull_cluster_and_agent_token(void **state)
{
    fixture *f = *state;
    char token[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", token), 201);
    assert_int_equal(strlen(token), 64);
    assert_true(authenticates_as(f, token, AGENT_M1));
    assert_int_equal(fl_auth_agent_count(f->auth), 1);

    json_t *cl = NULL;
    assert_int_equal(call_as(f, NULL, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters/m1", NULL, NULL, &cl), 200);
    assert_string_equal(json_string_value(json_object_get(json_object_get(cl, "spec"), "syncMode")), "Pull");
    json_decref(cl);
    assert_int_equal(call_as(f, NULL, "GET", "/api/v1/namespaces/karmada-es-m1", NULL, NULL, NULL), 200);

    /* the Secret holds the digest, never the token */
    json_t *s = NULL;
    assert_int_equal(
        call_as(f, NULL, "GET", "/api/v1/namespaces/karmada-cluster/secrets/m1-agent-token", NULL, NULL, &s), 200);
    char *text = fl_json_dumps(s, NULL);
    assert_null(strstr(text, token));
    assert_non_null(json_object_get(json_object_get(s, "data"), FL_AUTH_SECRET_KEY));
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(s, "metadata"), "labels"), FL_AUTH_SECRET_LABEL)),
                        "m1");
    free(text);
    json_decref(s);
}

static void test_reregistration_rotates_the_token(void **state)
{
    fixture *f = *state;
    char t1[128], t2[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", t1), 201);
    assert_int_equal(do_register(f, FL_AUTH_ADMIN, "m1", t2), 201);
    assert_string_not_equal(t1, t2);
    assert_true(authenticates_as(f, t1, NULL));
    assert_true(authenticates_as(f, t2, AGENT_M1));
    assert_int_equal(fl_auth_agent_count(f->auth), 1);
}

static void test_restart_loads_agent_tokens_from_secrets(void **state)
{
    fixture *f = *state;
    char t1[128], t2[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", t1), 201);
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m2", t2), 201);
    /* a new table over the same store, as after a restart */
    fl_auth_free(f->auth);
    fl_auth_new(&f->api, ADMIN_TOKEN, BOOT_TOKEN, &f->auth);
    f->api.auth = f->auth;
    assert_int_equal(fl_auth_load(f->auth), 2);
    assert_true(authenticates_as(f, t1, AGENT_M1));
    assert_true(authenticates_as(f, t2, FL_AUTH_AGENT_PREFIX "m2"));
}

/* Replicas on one store keep a table each: a token another replica issued after this table
 * was loaded is read from the store when it comes; an unknown token still is not one. */
static void test_a_token_another_replica_issued_is_found_in_the_store(void **state)
{
    fixture *f = *state;
    fl_auth *other = f->auth; /* the replica the agent registered with */
    fl_auth_new(&f->api, ADMIN_TOKEN, BOOT_TOKEN, &f->auth);
    assert_int_equal(fl_auth_load(f->auth), 0); /* loaded before the registration */
    fl_auth *mine = f->auth;
    f->auth = f->api.auth = other;
    char t1[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", t1), 201);
    f->auth = f->api.auth = mine;
    assert_true(authenticates_as(f, t1, AGENT_M1));
    char unknown[65];
    memset(unknown, 'a', 64);
    unknown[64] = 0;
    assert_true(authenticates_as(f, unknown, NULL));
    fl_auth_free(other);
}

static void test_deleting_the_cluster_revokes_the_token(void **state)
{
    fixture *f = *state;
    char t[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", t), 201);
    assert_true(authenticates_as(f, t, AGENT_M1));
    assert_int_equal(call_as(f, NULL, "DELETE", "/apis/cluster.karmada.io/v1alpha1/clusters/m1", NULL, NULL, NULL),
                     200);
    assert_true(authenticates_as(f, t, NULL));
    assert_int_equal(fl_auth_agent_count(f->auth), 0);
    /* the garbage collector followed the Secret's ownerReference */
    assert_int_equal(
        call_as(f, NULL, "GET", "/api/v1/namespaces/karmada-cluster/secrets/m1-agent-token", NULL, NULL, NULL), 404);
}

static void test_deleting_the_secret_revokes_the_token(void **state)
{
    fixture *f = *state;
    char t[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", t), 201);
    assert_int_equal(
        call_as(f, NULL, "DELETE", "/api/v1/namespaces/karmada-cluster/secrets/m1-agent-token", NULL, NULL, NULL),
        200);
    assert_true(authenticates_as(f, t, NULL));
}

static void test_a_recreated_cluster_does_not_inherit_the_token(void **state)
{
    fixture *f = *state;
    char t[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", t), 201);
    assert_true(authenticates_as(f, t, AGENT_M1));
    /* delete the Cluster but keep the Secret (Orphan), then create another Cluster m1 */
    assert_int_equal(call_as(f, NULL, "DELETE", "/apis/cluster.karmada.io/v1alpha1/clusters/m1", NULL,
                             "{\"propagationPolicy\":\"Orphan\"}", NULL),
                     200);
    assert_int_equal(call_as(f, NULL, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", NULL,
                             "{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\","
                             "\"metadata\":{\"name\":\"m1\"},\"spec\":{\"syncMode\":\"Pull\"}}",
                             NULL),
                     201);
    assert_true(authenticates_as(f, t, NULL));
}

static void test_register_refuses_push_clusters_bad_input_and_agents(void **state)
{
    fixture *f = *state;
    assert_int_equal(call_as(f, NULL, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", NULL,
                             "{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\","
                             "\"metadata\":{\"name\":\"p1\"},\"spec\":{\"syncMode\":\"Push\","
                             "\"apiEndpoint\":\"https://127.0.0.1:1\"}}",
                             NULL),
                     201);
    json_t *resp = NULL;
    assert_int_equal(call_as(f, FL_AUTH_BOOTSTRAP, "POST", FL_AUTH_REGISTER_PATH, NULL, "{\"clusterName\":\"p1\"}",
                             &resp),
                     409);
    assert_string_equal(json_string_value(json_object_get(resp, "reason")), "Conflict");
    assert_non_null(strstr(json_string_value(json_object_get(resp, "message")), "Push mode"));
    json_decref(resp);

    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "", NULL), 422);
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "Bad_Name", NULL), 422);
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "a234567890123456789012345678901234567890123456789", NULL),
                     422);
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "a23456789012345678901234567890123456789012345678", NULL),
                     201);
    assert_int_equal(call_as(f, FL_AUTH_BOOTSTRAP, "POST", FL_AUTH_REGISTER_PATH, NULL, "not json", NULL), 400);
    assert_int_equal(call_as(f, FL_AUTH_BOOTSTRAP, "GET", FL_AUTH_REGISTER_PATH, NULL, NULL, NULL), 405);

    char t[128];
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", t), 201);
    assert_int_equal(do_register(f, AGENT_M1, "m1", NULL), 403);
    assert_int_equal(do_register(f, FL_AUTH_ANONYMOUS, "m1", NULL), 403);
    assert_true(authenticates_as(f, t, AGENT_M1)); /* a refused attempt rotates nothing */
}

static void test_forbidden_answers_with_kubernetes_wording(void **state)
{
    fixture *f = *state;
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", NULL), 201);
    json_t *resp = NULL;
    assert_int_equal(
        call_as(f, AGENT_M1, "GET", "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m2/works", NULL, NULL, &resp),
        403);
    assert_string_equal(json_string_value(json_object_get(resp, "message")),
                        "works.work.karmada.io is forbidden: User \"system:flotilla:agent:m1\" cannot list resource "
                        "\"works\" in API group \"work.karmada.io\" in the namespace \"karmada-es-m2\"");
    assert_string_equal(json_string_value(json_object_get(resp, "reason")), "Forbidden");
    json_t *details = json_object_get(resp, "details");
    assert_string_equal(json_string_value(json_object_get(details, "kind")), "works");
    assert_string_equal(json_string_value(json_object_get(details, "group")), "work.karmada.io");
    json_decref(resp);

    assert_int_equal(call_as(f, AGENT_M1, "PUT", "/apis/cluster.karmada.io/v1alpha1/clusters/m2/status", NULL, "{}",
                             &resp),
                     403);
    assert_string_equal(json_string_value(json_object_get(resp, "message")),
                        "clusters.cluster.karmada.io \"m2\" is forbidden: User \"system:flotilla:agent:m1\" cannot "
                        "update resource \"clusters/status\" in API group \"cluster.karmada.io\" at the cluster scope");
    json_decref(resp);

    assert_int_equal(call_as(f, FL_AUTH_BOOTSTRAP, "GET", "/api/v1/namespaces/default/configmaps", NULL, NULL, &resp),
                     403);
    assert_string_equal(json_string_value(json_object_get(resp, "message")),
                        "configmaps is forbidden: User \"system:bootstrap\" cannot list resource \"configmaps\" in "
                        "API group \"\" in the namespace \"default\"");
    json_decref(resp);

    assert_int_equal(call_as(f, AGENT_M1, "GET", "/metrics", NULL, NULL, &resp), 403);
    assert_string_equal(json_string_value(json_object_get(resp, "message")),
                        "forbidden: User \"system:flotilla:agent:m1\" cannot get path \"/metrics\"");
    json_decref(resp);

    /* a resource that does not exist is forbidden, not reported missing */
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/apis/nope.example.com/v1/things", NULL, NULL, NULL), 403);
    assert_int_equal(call_as(f, FL_AUTH_ADMIN, "GET", "/apis/nope.example.com/v1/things", NULL, NULL, NULL), 404);
}

static void test_agent_requests_within_its_grant_are_served(void **state)
{
    fixture *f = *state;
    assert_int_equal(do_register(f, FL_AUTH_BOOTSTRAP, "m1", NULL), 201);
    const char *leases = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases";
    /* create takes the name from the body */
    assert_int_equal(call_as(f, AGENT_M1, "POST", leases, NULL,
                             "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
                             "\"m2\",\"namespace\":\"karmada-cluster\"},\"spec\":{}}",
                             NULL),
                     403);
    assert_int_equal(call_as(f, AGENT_M1, "POST", leases, NULL,
                             "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
                             "\"m1\",\"namespace\":\"karmada-cluster\"},\"spec\":{\"holderIdentity\":\"m1\"}}",
                             NULL),
                     201);
    /* the name is read as the create handler reads it: a duplicate key names nothing */
    assert_int_equal(call_as(f, AGENT_M1, "POST", leases, NULL,
                             "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
                             "\"m1\",\"name\":\"m2\"},\"spec\":{}}",
                             NULL),
                     403);
    assert_int_equal(call_as(f, AGENT_M1, "PATCH", "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/m1",
                             NULL, "{\"spec\":{\"leaseDurationSeconds\":40}}", NULL),
                     200);
    /* list narrowed to its own name by a field selector, as an informer on one object */
    assert_int_equal(call_as(f, AGENT_M1, "GET", leases, "metadata.name=m1", NULL, NULL), 200);
    assert_int_equal(call_as(f, AGENT_M1, "GET", leases, "metadata.name==m2", NULL, NULL), 403);
    assert_int_equal(call_as(f, AGENT_M1, "GET", leases, NULL, NULL, NULL), 403);
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters", "metadata.name=m1",
                             NULL, NULL),
                     200);
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters/m1", NULL, NULL, NULL),
                     200);
    assert_int_equal(call_as(f, AGENT_M1, "PATCH", "/apis/cluster.karmada.io/v1alpha1/clusters/m1/status", NULL,
                             "{\"status\":{\"kubernetesVersion\":\"v1.32.0\"}}", NULL),
                     200);
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m1/works",
                             NULL, NULL, NULL),
                     200);
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/api/v1/namespaces/karmada-es-m1", NULL, NULL, NULL), 200);
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/api/v1/namespaces/karmada-es-m2", NULL, NULL, NULL), 403);
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/apis", NULL, NULL, NULL), 200);
    assert_int_equal(call_as(f, AGENT_M1, "GET", "/version", NULL, NULL, NULL), 200);
}

/* ---------- the decision table, over the default RBAC objects and two registered agents ---------- */

static int setup_agents(void **state)
{
    setup(state);
    fixture *f = *state;
    assert_int_equal(do_register(f, NULL, "m1", NULL), 201);
    assert_int_equal(do_register(f, NULL, "m2", NULL), 201);
    return 0;
}

static void test_authorizer_decision_table(void **state)
{
    fixture *f = *state;
    for (size_t i = 0; i < sizeof decisions / sizeof *decisions; i++) {
        const decision *d = &decisions[i];
        fl_identity id;
        fl_auth_attrs at = {.who = ident_of(d->user, &id), .verb = d->verb, .path = NULL, .group = d->group,
                            .resource = d->resource, .subresource = d->sub, .ns = d->ns, .name = d->name};
        if (fl_auth_allowed(f->auth, &at) != d->allowed)
            fail_msg("row %zu: %s %s %s.%s/%s ns=%s name=%s: expected %s", i, d->user, d->verb, d->resource,
                     d->group, d->sub, d->ns, d->name, d->allowed ? "allowed" : "denied");
    }
}

static void test_authorizer_non_resource_paths(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *user, *verb, *path;
        bool allowed;
    } rows[] = {
        {AGENT_M1, "get", "/api", true},
        {AGENT_M1, "get", "/api/v1", true},
        {AGENT_M1, "get", "/apis", true},
        {AGENT_M1, "get", "/apis/work.karmada.io", true},
        {AGENT_M1, "get", "/apis/work.karmada.io/v1alpha1", true},
        {AGENT_M1, "get", "/version", true},
        {AGENT_M1, "get", "/readyz", true},
        {AGENT_M1, "get", "/healthz/ping", true},
        {AGENT_M1, "get", "/openapi/v3", true},
        {AGENT_M1, "get", "/openapi/v3/apis/work.karmada.io/v1alpha1", true},
        {AGENT_M1, "get", "/metrics", false},
        {AGENT_M1, "get", "/debug/pprof", false},
        {AGENT_M1, "post", "/api", false},
        {FL_AUTH_BOOTSTRAP, "get", "/apis", true},
        {FL_AUTH_BOOTSTRAP, "get", "/metrics", false},
        {FL_AUTH_ANONYMOUS, "get", "/healthz", true},
        {FL_AUTH_ADMIN, "get", "/metrics", true},
        {FL_AUTH_METRICS_READER, "get", "/metrics", true},
        {FL_AUTH_METRICS_READER, "get", "/readyz", true},
        {FL_AUTH_METRICS_READER, "post", "/metrics", false},
        {FL_AUTH_METRICS_READER, "get", "/metrics/extra", false},
        {FL_AUTH_METRICS_READER, "get", "/debug/pprof", false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        fl_identity id;
        fl_auth_attrs at = {.who = ident_of(rows[i].user, &id), .verb = rows[i].verb, .path = rows[i].path, .group = "",
                            .resource = "", .subresource = "", .ns = "", .name = ""};
        if (fl_auth_allowed(f->auth, &at) != rows[i].allowed)
            fail_msg("%s %s %s: expected %s", rows[i].user, rows[i].verb, rows[i].path,
                     rows[i].allowed ? "allowed" : "denied");
    }
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_authorizer_decision_table, setup_agents, teardown),
        cmocka_unit_test_setup_teardown(test_authorizer_non_resource_paths, setup_agents, teardown),
        T(test_token_file_names_users_and_groups),
        T(test_token_file_refuses_bad_lines_and_loads_nothing),
        T(test_admin_and_bootstrap_tokens_name_their_identities),
        T(test_register_creates_pull_cluster_and_agent_token),
        T(test_reregistration_rotates_the_token),
        T(test_restart_loads_agent_tokens_from_secrets),
        T(test_a_token_another_replica_issued_is_found_in_the_store),
        T(test_deleting_the_cluster_revokes_the_token),
        T(test_deleting_the_secret_revokes_the_token),
        T(test_a_recreated_cluster_does_not_inherit_the_token),
        T(test_register_refuses_push_clusters_bad_input_and_agents),
        T(test_forbidden_answers_with_kubernetes_wording),
        T(test_agent_requests_within_its_grant_are_served),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
