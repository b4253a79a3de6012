/* test_sa_token.c - the token and certificate checks of authentication: ES256 JWTs
 * (src/api/jwt.c) and the claims of ServiceAccount tokens (src/api/sa_token.c) - signature,
 * expiry, not-before, audience, issuer, subject, malformed input - and client certificates
 * (src/api/authn_x509.c with fl_pki_sign_client): our CA's, another CA's, expired, and one not
 * for client authentication. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "api/authn_x509.h"
#include "api/jwt.h"
#include "api/sa_token.h"
#include "api/tls.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/mem.h"

#define ISS "https://kubernetes.default.svc"

/* ---------- helpers ---------- */

static char *new_key_pem(void)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *out = fl_strndup(data, (size_t)n); /* the BIO's bytes end with no NUL: strndup reads past */
    BIO_free(b);
    EVP_PKEY_free(k);
    return out;
}

/* Claims as TokenRequest writes them, for default/robot uid u-1, valid from now to now+600. */
static json_t *claims_at(long long now)
{
    return json_pack("{s:[s], s:I, s:I, s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:I, s:s}", "aud", ISS, "exp",
                     (json_int_t)(now + 600), "iat", (json_int_t)now, "iss", ISS, "jti", "j-1", "kubernetes.io",
                     "namespace", "default", "serviceaccount", "name", "robot", "uid", "u-1", "nbf", (json_int_t)now,
                     "sub", "system:serviceaccount:default:robot");
}

static const char *const AUDS[] = {ISS};

static int check(const json_t *claims, long long now, const char **why)
{
    fl_sa_claims c;
    return fl_sa_claims_check(claims, ISS, AUDS, 1, now, &c, why);
}

/* Sign claims with key and verify them back; 0 when both the signature and the claims pass. */
static int round_trip(const fl_jwt_key *signer, const fl_jwt_key *verifier, const json_t *claims, long long now,
                      const char **why)
{
    char *tok = fl_jwt_sign(signer, claims);
    assert_non_null(tok);
    json_t *got = NULL;
    int rc = fl_jwt_verify(verifier, tok, strlen(tok), &got, why);
    if (!rc)
        rc = check(got, now, why);
    json_decref(got);
    free(tok);
    return rc;
}

/* ---------- JWT ---------- */

static void test_signed_token_verifies_and_its_claims_come_back(void **state)
{
    (void)state;
    char *pem = new_key_pem();
    fl_jwt_key *k = fl_jwt_key_new(pem);
    assert_non_null(k);
    assert_int_equal(strlen(fl_jwt_key_id(k)), 43);
    long long now = time(NULL);
    json_t *claims = claims_at(now);
    char *tok = fl_jwt_sign(k, claims);
    assert_true(fl_jwt_looks_like(tok));
    json_t *got = NULL;
    const char *why = NULL;
    assert_int_equal(fl_jwt_verify(k, tok, strlen(tok), &got, &why), 0);
    assert_true(json_equal(got, claims));
    fl_sa_claims c;
    assert_int_equal(fl_sa_claims_check(got, ISS, AUDS, 1, now, &c, &why), 0);
    assert_string_equal(c.ns, "default");
    assert_string_equal(c.name, "robot");
    assert_string_equal(c.uid, "u-1");
    assert_int_equal(c.exp, now + 600);
    json_decref(got);
    free(tok);
    json_decref(claims);
    fl_jwt_key_free(k);
    free(pem);
}

static void test_changed_payload_or_signature_is_refused(void **state)
{
    (void)state;
    char *pem = new_key_pem();
    fl_jwt_key *k = fl_jwt_key_new(pem);
    json_t *claims = claims_at(time(NULL));
    char *tok = fl_jwt_sign(k, claims);
    /* a payload naming another ServiceAccount, with the original signature */
    json_t *forged = claims_at(time(NULL));
    json_object_set_new(json_object_get(forged, "kubernetes.io"), "namespace", json_string("kube-system"));
    char *other = fl_jwt_sign(k, forged);
    char *d1 = strchr(tok, '.'), *d2 = strrchr(tok, '.');
    char *o1 = strchr(other, '.'), *o2 = strrchr(other, '.');
    char spliced[4096];
    snprintf(spliced, sizeof spliced, "%.*s%.*s%s", (int)(d1 - tok), tok, (int)(o2 - o1), o1, d2);
    json_t *got = NULL;
    const char *why = NULL;
    assert_int_equal(fl_jwt_verify(k, spliced, strlen(spliced), &got, &why), FL_EINVAL);
    assert_null(got);
    assert_string_equal(why, "the signature does not verify");
    /* one bit of the signature flipped */
    char *flip = strdup(tok);
    char *last = flip + strlen(flip) - 2;
    *last = *last == 'A' ? 'B' : 'A';
    assert_int_equal(fl_jwt_verify(k, flip, strlen(flip), &got, &why), FL_EINVAL);
    free(flip);
    free(tok);
    free(other);
    json_decref(claims);
    json_decref(forged);
    fl_jwt_key_free(k);
    free(pem);
}

static void test_token_of_another_key_is_refused(void **state)
{
    (void)state;
    char *p1 = new_key_pem(), *p2 = new_key_pem();
    fl_jwt_key *k1 = fl_jwt_key_new(p1), *k2 = fl_jwt_key_new(p2);
    json_t *claims = claims_at(time(NULL));
    const char *why = NULL;
    assert_int_equal(round_trip(k2, k1, claims, time(NULL), &why), FL_EINVAL);
    assert_string_equal(why, "signed with another key (kid)");
    json_decref(claims);
    fl_jwt_key_free(k1);
    fl_jwt_key_free(k2);
    free(p1);
    free(p2);
}

static void test_malformed_tokens_are_refused_without_a_crash(void **state)
{
    (void)state;
    char *pem = new_key_pem();
    fl_jwt_key *k = fl_jwt_key_new(pem);
    /* {"alg":"none"} . {} . "" and other shapes a client could send */
    static const char *const bad[] = {
        "", ".", "..", "a.b", "a.b.c.d", "eyJ.eyJ.", "e30.e30.", "e30=.e30.AAAA", "!!!.e30.e30",
        "eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJFUzI1NiJ9.e30.AAAA", "eyJhbGciOiJFUzI1NiJ9.W10.AAAA",
        "eyJhbGciOiJFUzI1NiIsImNyaXQiOlsieCJdfQ.e30.AAAA", "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxLCJhIjoyfQ.AAAA",
        NULL};
    for (int i = 0; bad[i]; i++) {
        json_t *got = (json_t *)1;
        const char *why = NULL;
        assert_int_equal(fl_jwt_verify(k, bad[i], strlen(bad[i]), &got, &why), FL_EINVAL);
        assert_null(got);
        assert_non_null(why);
    }
    /* longer than FL_JWT_MAX_LEN */
    size_t n = FL_JWT_MAX_LEN + 10;
    char *huge = malloc(n + 1);
    memset(huge, 'A', n);
    huge[5] = huge[10] = '.';
    huge[n] = 0;
    json_t *got;
    const char *why;
    assert_int_equal(fl_jwt_verify(k, huge, n, &got, &why), FL_EINVAL);
    free(huge);
    fl_jwt_key_free(k);
    free(pem);
    assert_null(fl_jwt_key_new("not a key"));
}

/* ---------- claims ---------- */

static void test_expired_token_is_refused_past_the_leeway(void **state)
{
    (void)state;
    long long now = time(NULL);
    json_t *c = claims_at(now);
    const char *why = NULL;
    assert_int_equal(check(c, now + 600 + FL_SA_LEEWAY_SECONDS - 1, &why), 0);
    assert_int_equal(check(c, now + 600 + FL_SA_LEEWAY_SECONDS + 1, &why), FL_EINVAL);
    assert_string_equal(why, "the token has expired");
    json_object_del(c, "exp");
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    assert_string_equal(why, "the token has no valid exp");
    json_object_set_new(c, "exp", json_string("tomorrow"));
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    json_decref(c);
}

static void test_token_not_valid_yet_is_refused(void **state)
{
    (void)state;
    long long now = time(NULL);
    json_t *c = claims_at(now + 3600);
    const char *why = NULL;
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    assert_string_equal(why, "the token is not valid yet (nbf)");
    json_decref(c);
}

static void test_audience_must_be_one_of_the_servers(void **state)
{
    (void)state;
    long long now = time(NULL);
    json_t *c = claims_at(now);
    const char *why = NULL;
    json_object_set_new(c, "aud", json_pack("[s, s]", "vault", "other"));
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    assert_string_equal(why, "the token's audiences are not this server's");
    json_object_set_new(c, "aud", json_pack("[s, s]", "vault", ISS));
    assert_int_equal(check(c, now, &why), 0);
    json_object_set_new(c, "aud", json_string(ISS)); /* a single string is an audience too */
    assert_int_equal(check(c, now, &why), 0);
    json_object_set_new(c, "aud", json_integer(1));
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    json_decref(c);
}

static void test_issuer_and_subject_must_match(void **state)
{
    (void)state;
    long long now = time(NULL);
    json_t *c = claims_at(now);
    const char *why = NULL;
    json_object_set_new(c, "iss", json_string("https://elsewhere"));
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    assert_string_equal(why, "the token's issuer is not this server");
    json_object_set_new(c, "iss", json_string(ISS));
    json_object_set_new(c, "sub", json_string("system:serviceaccount:kube-system:robot"));
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    assert_string_equal(why, "the token's subject is not its ServiceAccount");
    json_object_set_new(c, "sub", json_string("system:serviceaccount:default:robot"));
    json_object_del(json_object_get(json_object_get(c, "kubernetes.io"), "serviceaccount"), "uid");
    assert_int_equal(check(c, now, &why), FL_EINVAL);
    json_decref(c);
}

/* ---------- client certificates ---------- */

typedef struct ca {
    char dir[64];
    fl_pki pki;
} ca;

static void make_ca(ca *c)
{
    snprintf(c->dir, sizeof c->dir, "/tmp/fl-test-authn-XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(c->dir, NULL, &c->pki, &err), 0);
}

static void drop_ca(ca *c)
{
    fl_pki_close(&c->pki);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
    assert_int_equal(system(cmd), 0);
}

/* A PEM certificate request for CN cn (NULL: none) and O o1, o2 (either may be NULL). */
static char *csr(const char *cn, const char *o1, const char *o2)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509_REQ *r = X509_REQ_new();
    X509_NAME *n = X509_REQ_get_subject_name(r);
    if (cn)
        X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    if (o1)
        X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)o1, -1, -1, 0);
    if (o2)
        X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)o2, -1, -1, 0);
    X509_REQ_set_pubkey(r, k);
    X509_REQ_sign(r, k, EVP_sha256());
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509_REQ(b, r);
    char *data;
    long len = BIO_get_mem_data(b, &data);
    char *out = fl_strndup(data, (size_t)len);
    BIO_free(b);
    X509_REQ_free(r);
    EVP_PKEY_free(k);
    return out;
}

/* Verify a PEM certificate with x at time now. */
static int verify_pem(fl_x509_authn *x, const char *pem, long long now, fl_identity *who, const char **why)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(c);
    unsigned char *der = NULL;
    int n = i2d_X509(c, &der);
    X509_free(c);
    fl_x509_der d = {der, (size_t)n};
    int rc = fl_x509_authn_verify(x, &d, 1, now, who, why);
    OPENSSL_free(der);
    return rc;
}

static void test_client_certificate_names_user_and_groups(void **state)
{
    (void)state;
    ca c;
    make_ca(&c);
    fl_x509_authn *x = NULL;
    assert_int_equal(fl_x509_authn_new(c.pki.ca_cert_pem, &x, NULL), 0);
    char *req = csr("alice", "team-a", "devs"), *cert = NULL, *err = NULL;
    assert_int_equal(fl_pki_sign_client(c.pki.ca_cert_pem, c.pki.ca_key_pem, req, 3600, &cert, &err), 0);
    fl_identity who;
    const char *why = NULL;
    assert_int_equal(verify_pem(x, cert, 0, &who, &why), 0);
    assert_string_equal(who.user, "alice");
    assert_int_equal(who.ngroups, 3);
    assert_string_equal(who.groups[0], "team-a");
    assert_string_equal(who.groups[1], "devs");
    assert_string_equal(who.groups[2], "system:authenticated");
    /* the same certificate again comes from the table, and says the same */
    assert_int_equal(verify_pem(x, cert, 0, &who, &why), 0);
    assert_string_equal(who.user, "alice");
    /* past its expiry (one hour, and the hour it is backdated by) */
    assert_int_equal(verify_pem(x, cert, (long long)time(NULL) + 7200, &who, &why), FL_EINVAL);
    assert_string_equal(who.user, "");
    assert_string_equal(why, "certificate has expired");
    free(req);
    free(cert);
    fl_x509_authn_free(x);
    drop_ca(&c);
}

static void test_certificate_of_another_ca_or_not_for_clients_is_refused(void **state)
{
    (void)state;
    ca ours, theirs;
    make_ca(&ours);
    make_ca(&theirs);
    fl_x509_authn *x = NULL;
    assert_int_equal(fl_x509_authn_new(ours.pki.ca_cert_pem, &x, NULL), 0);
    char *req = csr("mallory", "system:masters", NULL), *cert = NULL, *err = NULL;
    assert_int_equal(fl_pki_sign_client(theirs.pki.ca_cert_pem, theirs.pki.ca_key_pem, req, 3600, &cert, &err), 0);
    fl_identity who;
    const char *why = NULL;
    assert_int_equal(verify_pem(x, cert, 0, &who, &why), FL_EINVAL);
    assert_string_equal(why, "unable to get local issuer certificate");
    /* our own serving certificate: our CA's, but for server authentication only */
    assert_int_equal(verify_pem(x, ours.pki.server_cert_pem, 0, &who, &why), FL_EINVAL);
    assert_string_equal(why, "unsuitable certificate purpose");
    free(req);
    free(cert);
    fl_x509_authn_free(x);
    drop_ca(&ours);
    drop_ca(&theirs);
}

static void test_signing_refuses_bad_requests(void **state)
{
    (void)state;
    ca c;
    make_ca(&c);
    char *cert = NULL, *err = NULL;
    char *no_cn = csr(NULL, "team-a", NULL);
    assert_int_equal(fl_pki_sign_client(c.pki.ca_cert_pem, c.pki.ca_key_pem, no_cn, 3600, &cert, &err), FL_EINVAL);
    assert_non_null(strstr(err, "common name"));
    free(err);
    char *ok = csr("bob", NULL, NULL);
    assert_int_equal(fl_pki_sign_client(c.pki.ca_cert_pem, c.pki.ca_key_pem, ok, 60, &cert, &err), FL_EINVAL);
    assert_non_null(strstr(err, "duration"));
    free(err);
    assert_int_equal(fl_pki_sign_client(c.pki.ca_cert_pem, c.pki.ca_key_pem, "garbage", 3600, &cert, &err), FL_EINVAL);
    assert_null(cert);
    free(err);
    free(no_cn);
    free(ok);
    drop_ca(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signed_token_verifies_and_its_claims_come_back),
        cmocka_unit_test(test_changed_payload_or_signature_is_refused),
        cmocka_unit_test(test_token_of_another_key_is_refused),
        cmocka_unit_test(test_malformed_tokens_are_refused_without_a_crash),
        cmocka_unit_test(test_expired_token_is_refused_past_the_leeway),
        cmocka_unit_test(test_token_not_valid_yet_is_refused),
        cmocka_unit_test(test_audience_must_be_one_of_the_servers),
        cmocka_unit_test(test_issuer_and_subject_must_match),
        cmocka_unit_test(test_client_certificate_names_user_and_groups),
        cmocka_unit_test(test_certificate_of_another_ca_or_not_for_clients_is_refused),
        cmocka_unit_test(test_signing_refuses_bad_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
