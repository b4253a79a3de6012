/* test_tls.c - the PKI (src/api/tls.c): first start creates the CA, serving cert and
 * token with safe modes; later starts reuse them; a new SAN reissues only the serving
 * cert; the kubeconfig carries the CA and the token. Each test works in its own
 * temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "api/tls.h"
#include "client/kubeconfig.h"
#include "core/err.h"

/* ---------- helpers ---------- */

static int setup_dir(void **state)
{
    char tmpl[] = "/tmp/fl-test-tls-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    *state = strdup(d);
    return 0;
}

static void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int teardown_dir(void **state)
{
    rm_rf(*state);
    free(*state);
    return 0;
}

static char *path_in(const char *dir, const char *name)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

static mode_t mode_of(const char *dir, const char *name)
{
    char *p = path_in(dir, name);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    free(p);
    return st.st_mode & 07777;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static X509 *parse_cert(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(x);
    return x;
}

/* Verify server_pem against ca_pem as a TLS server certificate for host (a DNS
 * name or an IP literal). Returns X509_V_OK or the verification error. */
static int verify_for(const char *ca_pem, const char *server_pem, const char *host)
{
    X509 *ca = parse_cert(ca_pem), *srv = parse_cert(server_pem);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    assert_int_equal(X509_STORE_CTX_init(ctx, store, srv, NULL), 1);
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (host) {
        if (strchr(host, ':') || strspn(host, "0123456789.") == strlen(host))
            assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(param, host), 1);
        else
            assert_int_equal(X509_VERIFY_PARAM_set1_host(param, host, 0), 1);
    }
    int ok = X509_verify_cert(ctx);
    int rc = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(ca);
    X509_free(srv);
    return rc;
}

/* ---------- tests ---------- */

static void test_first_start_creates_files_with_private_modes(void **state)
{
    const char *dir = *state;
    fl_pki p;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(dir, NULL, &p, &err), 0);
    assert_null(err);

    assert_int_equal(mode_of(dir, "pki"), 0700);
    assert_int_equal(mode_of(dir, "pki/ca.key"), 0600);
    assert_int_equal(mode_of(dir, "pki/server.key"), 0600);
    assert_int_equal(mode_of(dir, "pki/admin.token"), 0600);
    assert_int_equal(mode_of(dir, "pki/ca.crt") & 0077 & 02, 0); /* never world-writable */
    assert_int_equal(mode_of(dir, "pki/server.crt") & 02, 0);

    assert_non_null(strstr(p.ca_cert_pem, "-----BEGIN CERTIFICATE-----"));
    assert_non_null(strstr(p.server_cert_pem, "-----BEGIN CERTIFICATE-----"));
    /* Plain PKCS#8, the form libmicrohttpd/GnuTLS takes from memory. */
    assert_true(!strncmp(p.server_key_pem, "-----BEGIN PRIVATE KEY-----\n", 28));
    assert_int_equal(strlen(p.admin_token), 64);
    assert_int_equal(strspn(p.admin_token, "0123456789abcdef"), 64);

    /* What is handed back is what is on disk. */
    char *f = path_in(dir, "pki/ca.crt");
    char *disk = slurp(f);
    assert_string_equal(disk, p.ca_cert_pem);
    free(disk);
    free(f);
    f = path_in(dir, "pki/admin.token");
    disk = slurp(f);
    assert_int_equal(strncmp(disk, p.admin_token, 64), 0);
    free(disk);
    free(f);
    fl_pki_close(&p);
}

static void test_ca_has_ca_extensions(void **state)
{
    fl_pki p;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(*state, NULL, &p, &err), 0);
    X509 *ca = parse_cert(p.ca_cert_pem);
    X509 *srv = parse_cert(p.server_cert_pem);

    char cn[64];
    X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, cn, sizeof cn);
    assert_string_equal(cn, "flotilla-ca");
    X509_NAME_get_text_by_NID(X509_get_subject_name(srv), NID_commonName, cn, sizeof cn);
    assert_string_equal(cn, "flotilla-server");

    assert_int_equal(X509_check_ca(ca), 1);
    int crit = -1;
    BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(ca, NID_basic_constraints, &crit, NULL);
    assert_non_null(bc);
    assert_true(bc->ca);
    assert_int_equal(crit, 1);
    BASIC_CONSTRAINTS_free(bc);
    assert_true(X509_get_key_usage(ca) & KU_KEY_CERT_SIGN);
    assert_true(X509_get_key_usage(ca) & KU_CRL_SIGN);
    assert_non_null(X509_get0_subject_key_id(ca));

    assert_int_equal(X509_check_ca(srv), 0);
    assert_true(X509_get_extended_key_usage(srv) & XKU_SSL_SERVER);
    /* The serving cert names its issuer's key. */
    const ASN1_OCTET_STRING *akid = X509_get0_authority_key_id(srv);
    assert_non_null(akid);
    assert_int_equal(ASN1_OCTET_STRING_cmp(akid, X509_get0_subject_key_id(ca)), 0);
    /* 128-bit random serials differ between the two certificates. */
    assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca), X509_get0_serialNumber(srv)), 0);
    /* An EC P-256 key. */
    EVP_PKEY *k = X509_get0_pubkey(srv);
    assert_int_equal(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
    assert_int_equal(EVP_PKEY_get_bits(k), 256);

    X509_free(ca);
    X509_free(srv);
    fl_pki_close(&p);
}

static void test_server_cert_verifies_for_default_names(void **state)
{
    fl_pki p;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(*state, NULL, &p, &err), 0);
    assert_int_equal(verify_for(p.ca_cert_pem, p.server_cert_pem, NULL), X509_V_OK);
    assert_int_equal(verify_for(p.ca_cert_pem, p.server_cert_pem, "localhost"), X509_V_OK);
    assert_int_equal(verify_for(p.ca_cert_pem, p.server_cert_pem, "127.0.0.1"), X509_V_OK);
    assert_int_equal(verify_for(p.ca_cert_pem, p.server_cert_pem, "::1"), X509_V_OK);
    assert_int_not_equal(verify_for(p.ca_cert_pem, p.server_cert_pem, "example.com"), X509_V_OK);
    assert_int_not_equal(verify_for(p.ca_cert_pem, p.server_cert_pem, "10.0.0.1"), X509_V_OK);

    /* The key handed back belongs to the certificate. */
    X509 *srv = parse_cert(p.server_cert_pem);
    BIO *b = BIO_new_mem_buf(p.server_key_pem, -1);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    assert_non_null(key);
    assert_int_equal(X509_check_private_key(srv, key), 1);
    EVP_PKEY_free(key);
    BIO_free(b);
    X509_free(srv);
    fl_pki_close(&p);
}

static void test_restart_reuses_ca_cert_and_token(void **state)
{
    fl_pki a, b;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(*state, NULL, &a, &err), 0);
    assert_int_equal(fl_pki_ensure(*state, NULL, &b, &err), 0);
    assert_string_equal(a.ca_cert_pem, b.ca_cert_pem);
    assert_string_equal(a.server_cert_pem, b.server_cert_pem);
    assert_string_equal(a.server_key_pem, b.server_key_pem);
    assert_string_equal(a.admin_token, b.admin_token);
    fl_pki_close(&a);
    fl_pki_close(&b);
}

static void test_extra_san_reissues_server_cert_from_same_ca(void **state)
{
    fl_pki a, b, c;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(*state, NULL, &a, &err), 0);
    const char *extra[] = {"flotilla.example.com", "10.1.2.3", "[fd00::7]", NULL};
    assert_int_equal(fl_pki_ensure(*state, extra, &b, &err), 0);
    assert_string_equal(a.ca_cert_pem, b.ca_cert_pem);
    assert_string_equal(a.admin_token, b.admin_token);
    assert_string_not_equal(a.server_cert_pem, b.server_cert_pem);
    assert_int_equal(verify_for(b.ca_cert_pem, b.server_cert_pem, "flotilla.example.com"), X509_V_OK);
    assert_int_equal(verify_for(b.ca_cert_pem, b.server_cert_pem, "10.1.2.3"), X509_V_OK);
    assert_int_equal(verify_for(b.ca_cert_pem, b.server_cert_pem, "fd00::7"), X509_V_OK);
    assert_int_equal(verify_for(b.ca_cert_pem, b.server_cert_pem, "localhost"), X509_V_OK);

    /* Same or fewer SANs (spelt differently) next time: nothing changes. */
    const char *subset[] = {"FLOTILLA.example.com", "fd00:0:0:0:0:0:0:7", NULL};
    assert_int_equal(fl_pki_ensure(*state, subset, &c, &err), 0);
    assert_string_equal(b.server_cert_pem, c.server_cert_pem);
    fl_pki_close(&a);
    fl_pki_close(&b);
    fl_pki_close(&c);
}

static void test_missing_server_cert_is_reissued_damaged_ca_is_an_error(void **state)
{
    const char *dir = *state;
    fl_pki a, b;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(dir, NULL, &a, &err), 0);
    char *p = path_in(dir, "pki/server.crt");
    assert_int_equal(unlink(p), 0);
    free(p);
    assert_int_equal(fl_pki_ensure(dir, NULL, &b, &err), 0);
    assert_string_equal(a.ca_cert_pem, b.ca_cert_pem);
    assert_string_not_equal(a.server_key_pem, b.server_key_pem);
    assert_int_equal(verify_for(b.ca_cert_pem, b.server_cert_pem, "localhost"), X509_V_OK);
    fl_pki_close(&b);

    /* A damaged CA is never silently replaced: clients trust it. */
    p = path_in(dir, "pki/ca.crt");
    FILE *f = fopen(p, "w");
    fputs("not a certificate\n", f);
    fclose(f);
    assert_int_equal(fl_pki_ensure(dir, NULL, &b, &err), FL_EIO);
    assert_non_null(err);
    assert_non_null(strstr(err, "ca.crt"));
    assert_null(b.ca_cert_pem);
    assert_null(b.admin_token);
    free(err);
    free(p);
    fl_pki_close(&a);
}

/* A key or token others may read was exposed: refused, untouched, with the chmod to run. */
static void test_a_key_others_can_read_is_refused_and_left_alone(void **state)
{
    const char *dir = *state;
    fl_pki a, b;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(dir, NULL, &a, &err), 0);
    char *key = path_in(dir, "pki/ca.key"), *tok = path_in(dir, "pki/admin.token");
    char *before = slurp(key);
    assert_int_equal(chmod(key, 0644), 0);
    assert_int_equal(chmod(tok, 0620), 0);
    assert_int_equal(fl_pki_ensure(dir, NULL, &b, &err), FL_EIO);
    assert_null(b.admin_token);
    char *want = NULL;
    assert_true(asprintf(&want, "%s is readable by others (mode 0644); run: chmod 600 %s %s", key, key, tok) > 0);
    assert_string_equal(err, want);
    free(want);
    free(err);
    char *after = slurp(key);
    assert_string_equal(after, before);
    assert_int_equal(mode_of(dir, "pki/ca.key"), 0644);

    assert_int_equal(chmod(key, 0600), 0);
    assert_int_equal(chmod(tok, 0600), 0);
    assert_int_equal(fl_pki_ensure(dir, NULL, &b, &err), 0);
    assert_string_equal(a.ca_cert_pem, b.ca_cert_pem);
    fl_pki_close(&a);
    fl_pki_close(&b);
    free(before);
    free(after);
    free(key);
    free(tok);
}

static void test_bad_san_is_rejected(void **state)
{
    fl_pki p;
    char *err = NULL;
    const char *extra[] = {"has space.example.com", NULL};
    assert_int_equal(fl_pki_ensure(*state, extra, &p, &err), FL_EIO);
    assert_non_null(err);
    assert_non_null(strstr(err, "has space.example.com"));
    free(err);
}

static void test_kubeconfig_has_server_ca_and_token(void **state)
{
    const char *dir = *state;
    fl_pki p;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(dir, NULL, &p, &err), 0);
    char *kc = path_in(dir, "kubeconfig");
    assert_int_equal(fl_kubeconfig_write(kc, "https://127.0.0.1:6443", p.ca_cert_pem, p.admin_token), 0);
    assert_int_equal(mode_of(dir, "kubeconfig"), 0600);
    char *y = slurp(kc);

    assert_non_null(strstr(y, "apiVersion: v1\n"));
    assert_non_null(strstr(y, "kind: Config\n"));
    assert_non_null(strstr(y, "clusters:\n- name: flotilla\n  cluster:\n    server: \"https://127.0.0.1:6443\"\n"));
    assert_non_null(strstr(y, "users:\n- name: admin\n  user:\n"));
    assert_non_null(strstr(y, "contexts:\n- name: flotilla\n  context:\n    cluster: flotilla\n    user: admin\n"));
    assert_non_null(strstr(y, "current-context: flotilla\n"));
    char tokline[128];
    snprintf(tokline, sizeof tokline, "    token: \"%s\"\n", p.admin_token);
    assert_non_null(strstr(y, tokline));

    /* certificate-authority-data decodes to exactly the CA PEM. */
    const char *key = "certificate-authority-data: ";
    char *b64 = strstr(y, key);
    assert_non_null(b64);
    b64 += strlen(key);
    size_t n = strcspn(b64, "\n");
    unsigned char *dec = calloc(1, n + 1);
    int m = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)n);
    assert_true(m > 0);
    for (size_t i = n; i > 0 && b64[i - 1] == '='; i--)
        m--; /* EVP_DecodeBlock counts padding as zero bytes */
    assert_int_equal((size_t)m, strlen(p.ca_cert_pem));
    assert_memory_equal(dec, p.ca_cert_pem, (size_t)m);
    free(dec);
    free(y);

    /* Rewriting replaces atomically and keeps 0600; plain HTTP omits the CA. */
    assert_int_equal(fl_kubeconfig_write(kc, "http://127.0.0.1:8080", NULL, p.admin_token), 0);
    assert_int_equal(mode_of(dir, "kubeconfig"), 0600);
    y = slurp(kc);
    assert_null(strstr(y, "certificate-authority-data"));
    assert_non_null(strstr(y, "server: \"http://127.0.0.1:8080\""));
    free(y);

    /* Quotes in the URL cannot break out of the YAML scalar. */
    assert_int_equal(fl_kubeconfig_write(kc, "https://h\"x\\:1", NULL, NULL), 0);
    y = slurp(kc);
    assert_non_null(strstr(y, "server: \"https://h\\\"x\\\\:1\"\n"));
    free(y);
    free(kc);
    fl_pki_close(&p);
}

static void test_kubeconfig_write_fails_in_missing_dir(void **state)
{
    assert_int_equal(fl_kubeconfig_write("/nonexistent-dir-fl/kubeconfig", "https://x", NULL, "t"), FL_EIO);
}

static void test_token_equal(void **state)
{
    assert_true(fl_token_equal("abc", "abc"));
    assert_false(fl_token_equal("abc", "abd"));
    assert_false(fl_token_equal("abc", "abcd"));
    assert_false(fl_token_equal("", ""));
    assert_false(fl_token_equal(NULL, "abc"));
    assert_false(fl_token_equal("abc", NULL));
}

static void test_close_is_idempotent(void **state)
{
    fl_pki p = {0};
    fl_pki_close(&p);
    fl_pki_close(NULL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_first_start_creates_files_with_private_modes),
        T(test_ca_has_ca_extensions),
        T(test_server_cert_verifies_for_default_names),
        T(test_restart_reuses_ca_cert_and_token),
        T(test_extra_san_reissues_server_cert_from_same_ca),
        T(test_missing_server_cert_is_reissued_damaged_ca_is_an_error),
        T(test_a_key_others_can_read_is_refused_and_left_alone),
        T(test_bad_san_is_rejected),
        T(test_kubeconfig_has_server_ca_and_token),
        cmocka_unit_test(test_kubeconfig_write_fails_in_missing_dir),
        cmocka_unit_test(test_token_equal),
        cmocka_unit_test(test_close_is_idempotent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
