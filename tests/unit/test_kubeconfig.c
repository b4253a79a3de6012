/* test_kubeconfig.c - unit tests for kubeconfig loading (src/client/kubeconfig.c).
 *
 * Each test writes kubeconfig files (and the certificate and token files they name)
 * into its own temporary directory and loads them the way the CLI and the agent
 * will: by path, by $KUBECONFIG, with and without a named context. Error tests check
 * that the message names the file and the field, since that is what a user reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/kubeconfig.h"
#include "core/err.h"
#include "core/mem.h"

#define CA_PEM "-----BEGIN CERTIFICATE-----\nQ0EgY2VydA==\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nY2xpZW50IGNlcnQ=\n-----END CERTIFICATE-----\n"
#define KEY_PEM "-----BEGIN EC PRIVATE KEY-----\na2V5\n-----END EC PRIVATE KEY-----\n"

typedef struct fixture {
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/fl-kc-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char *cmd = fl_asprintf("rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f);
    unsetenv("KUBECONFIG");
    return 0;
}

static char *write_file(fixture *f, const char *name, const char *text)
{
    char *path = fl_asprintf("%s/%s", f->dir, name);
    for (char *s = path + strlen(f->dir) + 1; (s = strchr(s, '/')); s++) { /* mkdir -p */
        *s = 0;
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path;
}

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = fl_malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

/* A kubeconfig with two contexts: "prod" (current: token + CA data) and "dev"
 * (client certificate, namespace team-a). */
static char *two_contexts(void)
{
    char *ca = b64(CA_PEM), *cert = b64(CERT_PEM), *key = b64(KEY_PEM);
    char *y = fl_asprintf("apiVersion: v1\n"
                          "kind: Config\n"
                          "current-context: prod\n"
                          "clusters:\n"
                          "- name: prod-cluster\n"
                          "  cluster:\n"
                          "    server: https://10.0.0.1:6443/\n"
                          "    certificate-authority-data: %s\n"
                          "- name: dev-cluster\n"
                          "  cluster:\n"
                          "    server: dev.example.com:8443\n"
                          "    insecure-skip-tls-verify: true\n"
                          "users:\n"
                          "- name: admin\n"
                          "  user:\n"
                          "    token: s3cret\n"
                          "- name: dev\n"
                          "  user:\n"
                          "    client-certificate-data: %s\n"
                          "    client-key-data: %s\n"
                          "contexts:\n"
                          "- name: prod\n"
                          "  context: {cluster: prod-cluster, user: admin}\n"
                          "- name: dev\n"
                          "  context:\n"
                          "    cluster: dev-cluster\n"
                          "    user: dev\n"
                          "    namespace: team-a\n",
                          ca, cert, key);
    free(ca);
    free(cert);
    free(key);
    return y;
}

static void test_current_context_gives_server_ca_and_token(void **state)
{
    fixture *f = *state;
    char *y = two_contexts();
    char *path = write_file(f, "config", y);
    fl_kubeconfig kc;
    char *err = NULL;
    assert_int_equal(fl_kubeconfig_load(path, NULL, &kc, &err), 0);
    assert_null(err);
    assert_string_equal(kc.context, "prod");
    assert_string_equal(kc.cluster, "prod-cluster");
    assert_string_equal(kc.user, "admin");
    assert_string_equal(kc.server, "https://10.0.0.1:6443"); /* trailing slash trimmed */
    assert_string_equal(kc.ca_pem, CA_PEM);
    assert_false(kc.insecure);
    assert_string_equal(kc.token, "s3cret");
    assert_null(kc.client_cert_pem);
    assert_string_equal(kc.namespace, "default");
    assert_string_equal(kc.origin, path);
    fl_kubeconfig_close(&kc);
    fl_kubeconfig_close(&kc); /* closing twice is harmless */
    free(path);
    free(y);
}

static void test_named_context_gives_client_certificate_and_namespace(void **state)
{
    fixture *f = *state;
    char *y = two_contexts();
    char *path = write_file(f, "config", y);
    fl_kubeconfig kc;
    assert_int_equal(fl_kubeconfig_load(path, "dev", &kc, NULL), 0);
    assert_string_equal(kc.context, "dev");
    assert_string_equal(kc.server, "https://dev.example.com:8443"); /* kubectl's default scheme */
    assert_true(kc.insecure);
    assert_null(kc.ca_pem);
    assert_null(kc.token);
    assert_string_equal(kc.client_cert_pem, CERT_PEM);
    assert_string_equal(kc.client_key_pem, KEY_PEM);
    assert_string_equal(kc.namespace, "team-a");
    fl_kubeconfig_close(&kc);
    free(path);
    free(y);
}

static void test_file_references_resolve_relative_to_the_kubeconfig(void **state)
{
    fixture *f = *state;
    free(write_file(f, "sub/pki/ca.crt", CA_PEM));
    free(write_file(f, "sub/pki/client.crt", CERT_PEM));
    free(write_file(f, "sub/pki/client.key", KEY_PEM));
    char *abs_token = write_file(f, "token", "tok-from-file\n");
    char *y = fl_asprintf("current-context: c\n"
                          "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1', certificate-authority: pki/ca.crt}}]\n"
                          "users: [{name: u, user: {tokenFile: %s, client-certificate: pki/client.crt,"
                          " client-key: pki/client.key}}]\n"
                          "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
                          abs_token);
    char *path = write_file(f, "sub/config", y);
    fl_kubeconfig kc;
    char *err = NULL;
    assert_int_equal(fl_kubeconfig_load(path, NULL, &kc, &err), 0);
    assert_string_equal(kc.ca_pem, CA_PEM);
    assert_string_equal(kc.token, "tok-from-file"); /* trailing newline dropped */
    assert_string_equal(kc.client_cert_pem, CERT_PEM);
    assert_string_equal(kc.client_key_pem, KEY_PEM);
    assert_string_equal(kc.server, "http://127.0.0.1:1");
    fl_kubeconfig_close(&kc);
    free(path);
    free(abs_token);
    free(y);
}

static void test_inline_token_wins_over_token_file_and_basic_auth_loads(void **state)
{
    const char *y = "current-context: c\n"
                    "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
                    "users: [{name: u, user: {token: inline, tokenFile: /nonexistent}},"
                    " {name: b, user: {username: alice, password: pw}}]\n"
                    "contexts: [{name: c, context: {cluster: k, user: u}}, {name: d, context: {cluster: k, user: b}}]\n";
    fl_kubeconfig kc;
    assert_int_equal(fl_kubeconfig_parse(y, strlen(y), "mem", NULL, &kc, NULL), 0);
    assert_string_equal(kc.token, "inline");
    fl_kubeconfig_close(&kc);
    assert_int_equal(fl_kubeconfig_parse(y, strlen(y), "mem", "d", &kc, NULL), 0);
    assert_null(kc.token);
    assert_string_equal(kc.username, "alice");
    assert_string_equal(kc.password, "pw");
    fl_kubeconfig_close(&kc);
}

static void test_context_without_user_loads_without_credentials(void **state)
{
    const char *y = "current-context: c\n"
                    "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:8080'}}]\n"
                    "contexts: [{name: c, context: {cluster: k}}]\n";
    fl_kubeconfig kc;
    assert_int_equal(fl_kubeconfig_parse(y, strlen(y), "mem", NULL, &kc, NULL), 0);
    assert_null(kc.user);
    assert_null(kc.token);
    fl_kubeconfig_close(&kc);
}

static void test_kubeconfig_env_first_file_is_used_without_a_path(void **state)
{
    fixture *f = *state;
    char *y = two_contexts();
    char *path = write_file(f, "first", y);
    char *env = fl_asprintf("%s:%s/second-does-not-exist", path, f->dir);
    setenv("KUBECONFIG", env, 1);
    fl_kubeconfig kc;
    char *err = NULL;
    assert_int_equal(fl_kubeconfig_load(NULL, NULL, &kc, &err), 0);
    assert_string_equal(kc.origin, path);
    assert_string_equal(kc.token, "s3cret");
    fl_kubeconfig_close(&kc);

    /* without KUBECONFIG, $HOME/.kube/config */
    unsetenv("KUBECONFIG");
    char *old_home = getenv("HOME") ? fl_strdup(getenv("HOME")) : NULL;
    free(write_file(f, ".kube/config", y));
    setenv("HOME", f->dir, 1);
    assert_int_equal(fl_kubeconfig_load(NULL, "dev", &kc, &err), 0);
    assert_string_equal(kc.namespace, "team-a");
    fl_kubeconfig_close(&kc);
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
    free(env);
    free(path);
    free(y);
}

static void test_server_writes_a_kubeconfig_we_read_back(void **state)
{
    fixture *f = *state;
    char *path = fl_asprintf("%s/written", f->dir);
    assert_int_equal(fl_kubeconfig_write(path, "https://127.0.0.1:6443", CA_PEM, "abc123"), 0);
    fl_kubeconfig kc;
    char *err = NULL;
    assert_int_equal(fl_kubeconfig_load(path, NULL, &kc, &err), 0);
    assert_string_equal(kc.server, "https://127.0.0.1:6443");
    assert_string_equal(kc.ca_pem, CA_PEM);
    assert_string_equal(kc.token, "abc123");
    fl_kubeconfig_close(&kc);
    assert_int_equal(fl_kubeconfig_write(path, "http://127.0.0.1:8080", NULL, NULL), 0);
    assert_int_equal(fl_kubeconfig_load(path, NULL, &kc, &err), 0);
    assert_null(kc.token);
    assert_null(kc.ca_pem);
    fl_kubeconfig_close(&kc);
    free(path);
}

/* Parse y (from a file "kc" in the fixture) expecting rc and an error containing each of
 * the NULL-terminated fragments. */
static void expect_error(fixture *f, const char *y, const char *context, int want_rc, ...)
{
    char *path = write_file(f, "bad", y);
    fl_kubeconfig kc;
    char *err = NULL;
    int rc = fl_kubeconfig_load(path, context, &kc, &err);
    if (rc != want_rc || !err)
        fail_msg("rc %d (want %d), err %s", rc, want_rc, err ? err : "(null)");
    assert_non_null(strstr(err, path)); /* names the file */
    va_list ap;
    va_start(ap, want_rc);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        if (!strstr(err, frag))
            fail_msg("error \"%s\" lacks \"%s\"", err, frag);
    va_end(ap);
    assert_null(kc.server); /* zeroed on failure */
    free(err);
    free(path);
}

static void test_errors_name_the_file_and_the_field(void **state)
{
    fixture *f = *state;
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {insecure-skip-tls-verify: true}}]\n"
                 "contexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_EINVAL, "clusters[name=k].cluster.server", "required", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', certificate-authority-data: '!!notb64'}}]\n"
                 "contexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_EINVAL, "certificate-authority-data", "base64", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', certificate-authority-data: aGVsbG8=}}]\n"
                 "contexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_EINVAL, "certificate-authority-data", "PEM", NULL);
    expect_error(f,
                 "current-context: nope\ncontexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_ENOTFOUND, "contexts[name=nope]", "not found", NULL);
    expect_error(f,
                 "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n", "other", FL_ENOTFOUND,
                 "contexts[name=other]", NULL);
    expect_error(f, "current-context: c\ncontexts: [{name: c, context: {cluster: gone}}]\n", NULL, FL_ENOTFOUND,
                 "clusters[name=gone]", NULL);
    expect_error(f, "clusters: []\n", NULL, FL_EINVAL, "current-context", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h'}}]\n"
                 "users: [{name: u, user: {client-certificate-data: " "LS0tLS1CRUdJTiBYLS0tLS0K" "}}]\n"
                 "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
                 NULL, FL_EINVAL, "users[name=u].user", "without client-key-data", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', insecure-skip-tls-verify: true,"
                 " certificate-authority-data: LS0tLS1CRUdJTiBYLS0tLS0K}}]\n"
                 "contexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_EINVAL, "insecure-skip-tls-verify", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', insecure-skip-tls-verify: maybe}}]\n"
                 "contexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_EINVAL, "clusters[name=k].cluster.insecure-skip-tls-verify", "true or false", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h'}}]\n"
                 "users: [{name: u, user: {tokenFile: missing-token}}]\n"
                 "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
                 NULL, FL_ENOTFOUND, "users[name=u].user.tokenFile", "missing-token", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h'}}]\n"
                 "users: [{name: u, user: {exec: {command: aws}}}]\n"
                 "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
                 NULL, FL_EUNSUPPORTED, "users[name=u].user.exec", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: [1]}}]\n"
                 "contexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_EINVAL, "clusters[name=k].cluster.server", "string", NULL);
    expect_error(f,
                 "current-context: c\nclusters: [{name: k, cluster: {server: 'ftp://h'}}]\n"
                 "contexts: [{name: c, context: {cluster: k}}]\n",
                 NULL, FL_EINVAL, "server", "http or https", NULL);
    expect_error(f, "clusters: [\n  {name: k\n", NULL, FL_EINVAL, "line", NULL); /* YAML error with position */
}

static void test_missing_file_is_not_found_and_named(void **state)
{
    fixture *f = *state;
    char *path = fl_asprintf("%s/absent", f->dir);
    fl_kubeconfig kc;
    char *err = NULL;
    assert_int_equal(fl_kubeconfig_load(path, NULL, &kc, &err), FL_ENOTFOUND);
    assert_non_null(err);
    assert_non_null(strstr(err, path));
    free(err);
    free(path);
}

static void test_formatted_certificate_kubeconfig_reads_back(void **state)
{
    (void)state;
    const char *cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const char *key = "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n";
    size_t len = 0;
    char *text = fl_kubeconfig_format(&(fl_kubeconfig_spec){.server = "https://127.0.0.1:6443", .ca_pem = cert,
                                                            .user = "alice", .cert_pem = cert, .key_pem = key,
                                                            .namespace = "team-a", .context = "alice@flotilla"},
                                      &len);
    assert_non_null(text);
    assert_null(strstr(text, "token:"));
    fl_kubeconfig kc;
    char *err = NULL;
    assert_int_equal(fl_kubeconfig_parse(text, len, "formatted", NULL, &kc, &err), 0);
    assert_string_equal(kc.context, "alice@flotilla");
    assert_string_equal(kc.user, "alice");
    assert_string_equal(kc.namespace, "team-a");
    assert_string_equal(kc.server, "https://127.0.0.1:6443");
    assert_string_equal(kc.ca_pem, cert);
    assert_string_equal(kc.client_cert_pem, cert);
    assert_string_equal(kc.client_key_pem, key);
    assert_null(kc.token);
    fl_kubeconfig_close(&kc);
    free(text);
}

static void test_several_contexts_share_one_user_and_the_first_is_current(void **state)
{
    (void)state;
    const char *ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    fl_kubeconfig_spec ks[2] = {
        {.server = "https://127.0.0.1:6443", .ca_pem = ca, .user = "admin", .token = "t1", .cluster = "replica-1",
         .context = "replica-1"},
        {.server = "https://127.0.0.1:6444", .ca_pem = ca, .user = "admin", .token = "t1", .cluster = "replica-2",
         .context = "replica-2"},
    };
    size_t len = 0;
    char *text = fl_kubeconfig_format_many(ks, 2, &len);
    assert_non_null(text);
    const char *u = strstr(text, "- name: admin");
    assert_non_null(u);
    assert_null(strstr(u + 1, "- name: admin")); /* one user entry */
    fl_kubeconfig kc;
    char *err = NULL;
    assert_int_equal(fl_kubeconfig_parse(text, len, "formatted", NULL, &kc, &err), 0);
    assert_string_equal(kc.context, "replica-1");
    assert_string_equal(kc.server, "https://127.0.0.1:6443");
    fl_kubeconfig_close(&kc);
    assert_int_equal(fl_kubeconfig_parse(text, len, "formatted", "replica-2", &kc, &err), 0);
    assert_string_equal(kc.server, "https://127.0.0.1:6444");
    assert_string_equal(kc.token, "t1");
    assert_string_equal(kc.ca_pem, ca);
    fl_kubeconfig_close(&kc);
    free(text);
}

static void test_init_builds_a_plain_config(void **state)
{
    fl_kubeconfig kc;
    fl_kubeconfig_init(&kc, "http://127.0.0.1:9/", "t");
    assert_string_equal(kc.server, "http://127.0.0.1:9");
    assert_string_equal(kc.token, "t");
    assert_string_equal(kc.namespace, "default");
    fl_kubeconfig_close(&kc);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_current_context_gives_server_ca_and_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_named_context_gives_client_certificate_and_namespace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_references_resolve_relative_to_the_kubeconfig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inline_token_wins_over_token_file_and_basic_auth_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_without_user_loads_without_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kubeconfig_env_first_file_is_used_without_a_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_writes_a_kubeconfig_we_read_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_the_file_and_the_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_is_not_found_and_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_builds_a_plain_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_formatted_certificate_kubeconfig_reads_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_contexts_share_one_user_and_the_first_is_current, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
