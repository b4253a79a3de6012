/* authn_x509.c - client certificates to identities (see authn_x509.h).
 *
 * The trusted CAs live in one X509_STORE built at start-up and only read afterwards (OpenSSL
 * locks it internally for lookups), so verifications on several workers need no lock of ours.
 * What a verification found is kept in a small direct-mapped table keyed by the certificate's
 * SHA-256: a connection sends the same certificate with each request, and a chain check costs
 * a signature verification or more. An entry is good until the certificate expires, and for a
 * minute at most, so a CA replaced with --client-ca-file at a restart is the only thing that
 * invalidates one (and a restart empties the table). */
#include "api/authn_x509.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/tls.h"
#include "core/err.h"
#include "core/mem.h"

#define CACHE_SLOTS 64
#define CACHE_TTL_S 60
#define MAX_CHAIN 8

typedef struct cached {
    unsigned char digest[SHA256_DIGEST_LENGTH];
    long long until; /* 0: empty */
    fl_identity who;
} cached;

struct fl_x509_authn {
    X509_STORE *store;
    char *ca_cert_pem, *ca_key_pem; /* the signer, or NULL */
    pthread_mutex_t mu; /* guards cache */
    cached cache[CACHE_SLOTS];
};

int fl_x509_authn_new(const char *ca_pem, fl_x509_authn **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    fl_x509_authn *x = fl_calloc(1, sizeof *x);
    pthread_mutex_init(&x->mu, NULL);
    x->store = X509_STORE_new();
    BIO *b = BIO_new_mem_buf(ca_pem ? ca_pem : "", -1);
    int n = 0;
    for (X509 *c; b && x->store && (c = PEM_read_bio_X509(b, NULL, NULL, NULL)); X509_free(c))
        n += X509_STORE_add_cert(x->store, c) == 1;
    BIO_free(b);
    ERR_clear_error();
    if (!n) {
        if (err)
            *err = fl_strdup("the client CA bundle holds no PEM certificate");
        fl_x509_authn_free(x);
        return FL_EINVAL;
    }
    *out = x;
    return 0;
}

void fl_x509_authn_free(fl_x509_authn *x)
{
    if (!x)
        return;
    X509_STORE_free(x->store);
    free(x->ca_cert_pem);
    if (x->ca_key_pem)
        OPENSSL_cleanse(x->ca_key_pem, strlen(x->ca_key_pem));
    free(x->ca_key_pem);
    pthread_mutex_destroy(&x->mu);
    OPENSSL_cleanse(x->cache, sizeof x->cache);
    free(x);
}

/* The text of entry idx of name, into out; false when absent, empty, not convertible to
 * UTF-8, too long, or holding a NUL. */
static bool name_entry(X509_NAME *name, int idx, char *out, size_t cap)
{
    X509_NAME_ENTRY *e = X509_NAME_get_entry(name, idx);
    unsigned char *utf8 = NULL;
    int n = e ? ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(e)) : -1;
    bool ok = n > 0 && (size_t)n < cap && !memchr(utf8, 0, (size_t)n);
    if (ok) {
        memcpy(out, utf8, (size_t)n);
        out[n] = 0;
    }
    OPENSSL_free(utf8);
    return ok;
}

/* The identity the subject of leaf names: CN is the user, each O a group. */
static int identity_of(X509 *leaf, fl_identity *who, const char **why)
{
    X509_NAME *subj = X509_get_subject_name(leaf);
    char buf[FL_AUTH_USER_MAX];
    int cn = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
    if (cn < 0 || !name_entry(subj, cn, buf, sizeof buf) || fl_identity_set(who, buf, NULL)) {
        *why = "the certificate's subject has no usable common name";
        return FL_EINVAL;
    }
    for (int i = X509_NAME_get_index_by_NID(subj, NID_organizationName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(subj, NID_organizationName, i)) {
        if (!name_entry(subj, i, buf, FL_AUTH_GROUP_MAX) || fl_identity_add_group(who, buf)) {
            *why = "the certificate names an organization too long, or too many";
            return FL_EINVAL;
        }
    }
    if (fl_identity_add_group(who, FL_AUTH_GROUP_AUTHENTICATED)) {
        *why = "the certificate names too many organizations";
        return FL_EINVAL;
    }
    return 0;
}

static long long not_after(X509 *leaf)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1)
        return 0;
    return (long long)timegm(&tm);
}

static int verify_chain(fl_x509_authn *x, const fl_x509_der *certs, size_t n, long long now, fl_identity *who,
                        long long *expires, const char **why)
{
    X509 *leaf = NULL;
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int rc = FL_EINVAL;
    *why = "the certificate cannot be parsed";
    const unsigned char *p = certs[0].data;
    if (!untrusted || !ctx || certs[0].len > (size_t)INT32_MAX || !(leaf = d2i_X509(NULL, &p, (long)certs[0].len)) ||
        p != certs[0].data + certs[0].len)
        goto out;
    for (size_t i = 1; i < n && i < MAX_CHAIN; i++) {
        p = certs[i].data;
        X509 *c = certs[i].len <= (size_t)INT32_MAX ? d2i_X509(NULL, &p, (long)certs[i].len) : NULL;
        if (!c || !sk_X509_push(untrusted, c)) {
            X509_free(c);
            goto out;
        }
    }
    if (X509_STORE_CTX_init(ctx, x->store, leaf, untrusted) != 1 ||
        X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT) != 1) {
        *why = "cannot set up the verification";
        goto out;
    }
    X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), (time_t)now);
    if (X509_verify_cert(ctx) != 1) {
        *why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
        goto out;
    }
    if ((rc = identity_of(leaf, who, why)))
        goto out;
    *expires = not_after(leaf);
    rc = 0;
out:
    ERR_clear_error();
    X509_STORE_CTX_free(ctx);
    sk_X509_pop_free(untrusted, X509_free);
    X509_free(leaf);
    if (rc)
        memset(who, 0, sizeof *who);
    return rc;
}

int fl_x509_authn_verify(fl_x509_authn *x, const fl_x509_der *certs, size_t n, long long now, fl_identity *who,
                         const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    memset(who, 0, sizeof *who);
    if (!x || !certs || !n || !certs[0].data || !certs[0].len) {
        *why = "no certificate";
        return FL_EINVAL;
    }
    if (!now)
        now = (long long)time(NULL);
    /* the leaf and its intermediates, as sent, are what the verdict is about */
    unsigned char digest[SHA256_DIGEST_LENGTH] = {0};
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    bool hashed = mc && EVP_DigestInit_ex(mc, EVP_sha256(), NULL) == 1;
    for (size_t i = 0; hashed && i < n && i < MAX_CHAIN; i++)
        hashed = EVP_DigestUpdate(mc, certs[i].data, certs[i].len) == 1;
    hashed = hashed && EVP_DigestFinal_ex(mc, digest, NULL) == 1;
    EVP_MD_CTX_free(mc);
    if (!hashed) {
        *why = "cannot hash the certificate";
        return FL_EINVAL;
    }
    cached *slot = &x->cache[digest[0] % CACHE_SLOTS];
    pthread_mutex_lock(&x->mu);
    bool hit = slot->until > now && !CRYPTO_memcmp(slot->digest, digest, sizeof digest);
    if (hit)
        *who = slot->who;
    pthread_mutex_unlock(&x->mu);
    if (hit)
        return 0;
    long long expires = 0;
    int rc = verify_chain(x, certs, n, now, who, &expires, why);
    if (rc)
        return rc;
    long long until = now + CACHE_TTL_S < expires ? now + CACHE_TTL_S : expires;
    pthread_mutex_lock(&x->mu);
    memcpy(slot->digest, digest, sizeof digest);
    slot->until = until;
    slot->who = *who;
    pthread_mutex_unlock(&x->mu);
    return 0;
}

void fl_x509_authn_set_signer(fl_x509_authn *x, const char *ca_cert_pem, const char *ca_key_pem)
{
    x->ca_cert_pem = fl_strdup(ca_cert_pem);
    x->ca_key_pem = fl_strdup(ca_key_pem);
}

int fl_x509_authn_sign(fl_x509_authn *x, const char *csr_pem, long long seconds, char **cert_pem, char **err)
{
    *cert_pem = NULL;
    if (err)
        *err = NULL;
    if (!x || !x->ca_key_pem) {
        if (err)
            *err = fl_strdup("this server does not issue client certificates");
        return FL_EUNSUPPORTED;
    }
    return fl_pki_sign_client(x->ca_cert_pem, x->ca_key_pem, csr_pem, seconds, cert_pem, err);
}
