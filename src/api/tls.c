/* tls.c - the server's PKI: a private CA, the serving certificate it signs, the
 * admin bearer token (the kubeconfig that hands them to clients is written by
 * client/kubeconfig.c).
 *
 * Everything lives in DIR/pki/ (mode 0700; keys and tokens 0600, and a start on one that
 * others may read is refused, as ssh refuses such a key) and is generated once, on first
 * start:
 *
 *   ca.crt / ca.key          EC P-256 self-signed CA "flotilla-ca", 10 years
 *   server.crt / server.key  EC P-256 "flotilla-server" signed by the CA, 1 year,
 *                            SANs localhost, 127.0.0.1, ::1 and the caller's extras
 *   admin.token              32 random bytes as 64 hex digits
 *   sa.key                   EC P-256 key that signs ServiceAccount tokens (sa_token.c)
 *
 * Later starts load the same files, so kubeconfigs written earlier stay valid. The
 * CA and the token are never replaced behind the user's back: if one is unreadable
 * we fail with a message that says which file to delete. The serving certificate is
 * cheap to replace and derived from the CA, so it is reissued (same CA, fresh key)
 * whenever it is missing, damaged, not signed by the current CA, does not match its
 * key, lacks a requested SAN, or is within 30 days of expiry.
 *
 * Keys are PEM PKCS#8 ("BEGIN PRIVATE KEY"), the form OpenSSL 3 writes by default and
 * the one GnuTLS (libmicrohttpd's TLS backend) imports without further hints. Every
 * file is written to a temporary name, fsynced and renamed, so a crash never leaves a
 * half-written key; the loader treats a key without its matching certificate as
 * missing. Single-threaded: called once at start-up. */
#include "api/tls.h"

#include "core/err.h"
#include "core/file.h"
#include "core/log.h"
#include "core/mem.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define CA_DAYS 3650
#define SERVER_DAYS 365
#define RENEW_BEFORE_DAYS 30
/* Certificates start an hour in the past so a client whose clock runs a little
 * behind ours does not reject a certificate issued a moment ago. */
#define BACKDATE_SECS 3600L
#define TOKEN_BYTES 32

/* One subjectAltName entry, normalised: IPs as raw bytes so "::1" and
 * "0:0:0:0:0:0:0:1" compare equal, DNS names compared case-insensitively. */
typedef struct san {
    int is_ip;
    int iplen;                  /* 4 or 16 */
    unsigned char ip[16];
    const char *dns;            /* borrowed */
} san;

/* ---------- errors ---------- */

/* Build the caller's error message, appending the most recent OpenSSL reason if
 * there is one, and clear OpenSSL's error queue either way. */
static int fail(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fl_vasprintf(fmt, ap);
    va_end(ap);
    unsigned long e = ERR_peek_last_error();
    if (e) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        char *m2 = fl_asprintf("%s (%s)", msg, buf);
        free(msg);
        msg = m2;
    }
    ERR_clear_error();
    if (err)
        *err = msg;
    else
        free(msg);
    return FL_EIO;
}

/* ---------- files ---------- */

/* Create a directory (and missing parents) with mode 0700; an existing one is
 * kept as it is. */
static int mkdir_p(const char *path)
{
    char *p = fl_strdup(path);
    int rc = 0;
    for (char *s = p + 1; ; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
            rc = FL_EIO;
            break;
        }
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return rc;
}

/* ---------- PEM <-> objects ---------- */

/* PEM text of a key as unencrypted PKCS#8 ("BEGIN PRIVATE KEY"). Heap string. */
static char *key_to_pem(EVP_PKEY *key)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        out = fl_strndup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

static char *cert_to_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b && PEM_write_bio_X509(b, x) == 1) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        out = fl_strndup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

/* Load a PEM key file. Returns 0, FL_ENOTFOUND (no file) or FL_EINVAL (unparsable). */
static int load_key(const char *path, EVP_PKEY **out)
{
    *out = NULL;
    char *pem;
    size_t n;
    int rc = fl_read_file(path, 0, &pem, &n);
    if (rc)
        return rc;
    BIO *b = BIO_new_mem_buf(pem, (int)n);
    *out = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    OPENSSL_cleanse(pem, n);
    free(pem);
    return *out ? 0 : FL_EINVAL;
}

static int load_cert(const char *path, X509 **out)
{
    *out = NULL;
    char *pem;
    size_t n;
    int rc = fl_read_file(path, 0, &pem, &n);
    if (rc)
        return rc;
    BIO *b = BIO_new_mem_buf(pem, (int)n);
    *out = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    free(pem);
    return *out ? 0 : FL_EINVAL;
}

static int save_pem(const char *path, const char *pem, mode_t mode, char **err)
{
    if (!pem)
        return fail(err, "pki: cannot encode %s", path);
    if (fl_write_file_atomic(path, pem, strlen(pem), mode))
        return fail(err, "pki: cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* Write key (0600) then cert (0644) as PEM; the key's text is wiped before it is freed. */
static int save_pair(const char *key_path, EVP_PKEY *key, const char *cert_path, X509 *cert, char **err)
{
    char *kp = key_to_pem(key), *cp = cert_to_pem(cert);
    int rc = save_pem(key_path, kp, 0600, err);
    if (!rc)
        rc = save_pem(cert_path, cp, 0644, err);
    if (kp)
        OPENSSL_cleanse(kp, strlen(kp));
    free(kp);
    free(cp);
    return rc;
}

/* ---------- certificate building ---------- */

static EVP_PKEY *new_key(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

/* A random positive 128-bit serial number (RFC 5280 allows up to 20 octets). */
static int set_random_serial(X509 *x)
{
    unsigned char r[16];
    if (RAND_bytes(r, sizeof r) != 1)
        return -1;
    r[0] &= 0x7f;   /* positive */
    r[0] |= 0x40;   /* never shorter than 16 octets, never zero */
    BIGNUM *bn = BN_bin2bn(r, sizeof r, NULL);
    int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

/* Add an extension written in OpenSSL's config syntax. Only ever called with
 * constant strings, never with user input. */
static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!ext)
        return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

/* Common skeleton: v3, random serial, validity, subject CN, public key. */
static X509 *cert_skeleton(EVP_PKEY *key, const char *cn, int days)
{
    X509 *x = X509_new();
    if (!x)
        return NULL;
    X509_NAME *name = X509_get_subject_name(x);
    if (X509_set_version(x, X509_VERSION_3) != 1 || set_random_serial(x) < 0 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_SECS) ||
        !X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) != 1 ||
        X509_set_pubkey(x, key) != 1) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static X509 *make_ca(EVP_PKEY *key)
{
    X509 *x = cert_skeleton(key, "flotilla-ca", CA_DAYS);
    if (!x)
        return NULL;
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
        add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
        add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
        add_ext(x, &ctx, NID_subject_key_identifier, "hash") < 0 ||
        X509_sign(x, key, EVP_sha256()) <= 0) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* Parse one requested SAN. IPv6 literals may come bracketed ("[::1]"). Returns 0,
 * or -1 for an entry that cannot be a DNS name (empty, or contains whitespace,
 * commas or control characters). */
static int parse_san(const char *s, san *out)
{
    memset(out, 0, sizeof *out);
    char buf[INET6_ADDRSTRLEN + 2];
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']' && n - 2 < sizeof buf) {
        memcpy(buf, s + 1, n - 2);
        buf[n - 2] = '\0';
        if (inet_pton(AF_INET6, buf, out->ip) == 1) {
            out->is_ip = 1;
            out->iplen = 16;
            return 0;
        }
    }
    if (inet_pton(AF_INET, s, out->ip) == 1) {
        out->is_ip = 1;
        out->iplen = 4;
        return 0;
    }
    if (inet_pton(AF_INET6, s, out->ip) == 1) {
        out->is_ip = 1;
        out->iplen = 16;
        return 0;
    }
    if (n == 0 || n > 253)
        return -1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == ',' || *p == '/')
            return -1;
    out->dns = s;
    return 0;
}

static int san_equal(const san *a, const san *b)
{
    if (a->is_ip != b->is_ip)
        return 0;
    if (a->is_ip)
        return a->iplen == b->iplen && memcmp(a->ip, b->ip, (size_t)a->iplen) == 0;
    return strcasecmp(a->dns, b->dns) == 0;
}

/* The full SAN list for the serving certificate: defaults first, then extras,
 * duplicates dropped. *out is a heap array of *n entries borrowing from extras. */
static int wanted_sans(const char *const *extra, san **out, size_t *n, char **err)
{
    static const char *const defaults[] = {"localhost", "127.0.0.1", "::1"};
    size_t cap = 3, cnt = 0;
    for (const char *const *e = extra; e && *e; e++)
        cap++;
    san *v = fl_calloc(cap, sizeof *v);
    for (size_t i = 0; i < cap; i++) {
        const char *s = i < 3 ? defaults[i] : extra[i - 3];
        san one;
        if (parse_san(s, &one) < 0) {
            free(v);
            *out = NULL;
            *n = 0;
            return fail(err, "pki: \"%s\" is neither an IP address nor a DNS name; "
                             "fix the extra subject alternative names", s);
        }
        int dup = 0;
        for (size_t j = 0; j < cnt && !dup; j++)
            dup = san_equal(&v[j], &one);
        if (!dup)
            v[cnt++] = one;
    }
    *out = v;
    *n = cnt;
    return 0;
}

static GENERAL_NAMES *sans_to_names(const san *v, size_t n)
{
    GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
    if (!names)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_STRING *s = v[i].is_ip ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();
        int ok = g && s;
        if (ok)
            ok = v[i].is_ip ? ASN1_OCTET_STRING_set(s, v[i].ip, v[i].iplen)
                            : ASN1_STRING_set(s, v[i].dns, (int)strlen(v[i].dns));
        if (!ok) {
            ASN1_STRING_free(s);
            GENERAL_NAME_free(g);
            GENERAL_NAMES_free(names);
            return NULL;
        }
        GENERAL_NAME_set0_value(g, v[i].is_ip ? GEN_IPADD : GEN_DNS, s);
        if (!sk_GENERAL_NAME_push(names, g)) {
            GENERAL_NAME_free(g);
            GENERAL_NAMES_free(names);
            return NULL;
        }
    }
    return names;
}

static X509 *make_server(EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key, const san *sans, size_t nsans)
{
    X509 *x = cert_skeleton(key, "flotilla-server", SERVER_DAYS);
    if (!x)
        return NULL;
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
    GENERAL_NAMES *names = sans_to_names(sans, nsans);
    int ok = names && X509_set_issuer_name(x, X509_get_subject_name(ca)) == 1 &&
             add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") == 0 &&
             add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") == 0 &&
             add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") == 0 &&
             add_ext(x, &ctx, NID_subject_key_identifier, "hash") == 0 &&
             add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") == 0 &&
             X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, 0) == 1 &&
             X509_sign(x, ca_key, EVP_sha256()) > 0;
    GENERAL_NAMES_free(names);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* ---------- checking an existing serving certificate ---------- */

static int cert_has_san(GENERAL_NAMES *names, const san *want)
{
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        int type;
        ASN1_STRING *s = GENERAL_NAME_get0_value(g, &type);
        if (want->is_ip && type == GEN_IPADD) {
            if (ASN1_STRING_length(s) == want->iplen &&
                memcmp(ASN1_STRING_get0_data(s), want->ip, (size_t)want->iplen) == 0)
                return 1;
        } else if (!want->is_ip && type == GEN_DNS) {
            size_t len = strlen(want->dns);
            if ((size_t)ASN1_STRING_length(s) == len &&
                strncasecmp((const char *)ASN1_STRING_get0_data(s), want->dns, len) == 0)
                return 1;
        }
    }
    return 0;
}

/* Why an existing serving certificate must be replaced, or NULL if it is fine. */
static const char *server_cert_problem(X509 *cert, EVP_PKEY *key, EVP_PKEY *ca_key,
                                       const san *sans, size_t nsans)
{
    if (X509_check_private_key(cert, key) != 1)
        return "does not match server.key";
    if (X509_verify(cert, ca_key) != 1)
        return "is not signed by the current CA";
    time_t soon = time(NULL) + (time_t)RENEW_BEFORE_DAYS * 86400;
    if (X509_cmp_time(X509_get0_notAfter(cert), &soon) <= 0)
        return "expires within 30 days";
    GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    if (!names)
        return "has no subject alternative names";
    const char *why = NULL;
    for (size_t i = 0; i < nsans && !why; i++)
        if (!cert_has_san(names, &sans[i]))
            why = "lacks a requested subject alternative name";
    GENERAL_NAMES_free(names);
    return why;
}

/* ---------- the token ---------- */

static int is_token(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    return n == 2 * TOKEN_BYTES;
}

static int ensure_token(const char *path, char **out, char **err)
{
    *out = NULL;
    char *text;
    int rc = fl_read_file(path, 0, &text, NULL);
    if (rc == 0) {
        size_t n = strlen(text);
        while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
            text[--n] = '\0';
        if (!is_token(text)) {
            OPENSSL_cleanse(text, strlen(text));
            free(text);
            return fail(err, "pki: %s does not hold a 64-hex-digit token; delete it to generate a new one",
                        path);
        }
        *out = text;
        return 0;
    }
    if (rc != FL_ENOTFOUND)
        return fail(err, "pki: cannot read %s: %s", path, strerror(errno));

    unsigned char raw[TOKEN_BYTES];
    if (RAND_bytes(raw, sizeof raw) != 1)
        return fail(err, "pki: no randomness for the token %s", path);
    char *hex = fl_malloc(2 * TOKEN_BYTES + 2);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < TOKEN_BYTES; i++) {
        hex[2 * i] = digits[raw[i] >> 4];
        hex[2 * i + 1] = digits[raw[i] & 15];
    }
    OPENSSL_cleanse(raw, sizeof raw);
    hex[2 * TOKEN_BYTES] = '\n';
    hex[2 * TOKEN_BYTES + 1] = '\0';
    if (fl_write_file_atomic(path, hex, 2 * TOKEN_BYTES + 1, 0600)) {
        int e = errno;
        OPENSSL_cleanse(hex, 2 * TOKEN_BYTES + 1);
        free(hex);
        return fail(err, "pki: cannot write %s: %s", path, strerror(e));
    }
    hex[2 * TOKEN_BYTES] = '\0';
    *out = hex;
    return 0;
}

/* ---------- the ServiceAccount token key ---------- */

/* Load the key that signs ServiceAccount tokens, creating it (EC P-256, mode 0600) when
 * missing. Unlike the serving certificate it is never replaced silently: every token issued
 * so far is signed with it. *out is its PKCS#8 PEM (heap). */
static int ensure_sa_key(const char *path, char **out, char **err)
{
    *out = NULL;
    EVP_PKEY *key = NULL;
    int rc = load_key(path, &key);
    if (rc == FL_EINVAL)
        return fail(err, "pki: %s is damaged; delete it to create a new one (ServiceAccount tokens issued so "
                         "far stop working)", path);
    if (rc && rc != FL_ENOTFOUND)
        return fail(err, "pki: cannot read %s: %s", path, strerror(errno));
    if (rc == FL_ENOTFOUND) {
        if (!(key = new_key()))
            return fail(err, "pki: cannot generate %s", path);
        char *pem = key_to_pem(key);
        rc = save_pem(path, pem, 0600, err);
        if (pem)
            OPENSSL_cleanse(pem, strlen(pem));
        free(pem);
        if (rc) {
            EVP_PKEY_free(key);
            return rc;
        }
        fl_log(FL_LOG_INFO, "pki", "created ServiceAccount token key %s", path);
    }
    *out = key_to_pem(key);
    EVP_PKEY_free(key);
    return *out ? 0 : fail(err, "pki: cannot encode %s", path);
}

/* ---------- public ---------- */

/* The files under DIR/pki/ that hold secrets: what must stay private to the server's user. */
static const char *const SECRET_FILES[] = {"ca.key", "server.key", "sa.key", "admin.token", "bootstrap.token", NULL};

/* Refuse keys and tokens others can read: they were exposed, and going on would hide it. */
static int check_secrets_private(const char *pki, char **err)
{
    enum { N = sizeof SECRET_FILES / sizeof *SECRET_FILES };
    char *paths[N] = {0};
    for (size_t i = 0; SECRET_FILES[i]; i++)
        paths[i] = fl_asprintf("%s/%s", pki, SECRET_FILES[i]);
    char *why = NULL;
    int rc = fl_file_check_private((const char *const *)paths, &why);
    for (size_t i = 0; i < N; i++)
        free(paths[i]);
    if (rc) {
        if (err)
            *err = why;
        else
            free(why);
        return FL_EIO;
    }
    return 0;
}

int fl_pki_check_private(const char *dir, char **err)
{
    char *pki = fl_asprintf("%s/pki", dir);
    int rc = check_secrets_private(pki, err);
    free(pki);
    return rc;
}

int fl_token_ensure(const char *path, char **out, char **err)
{
    if (err)
        *err = NULL;
    return ensure_token(path, out, err);
}

int fl_pki_ensure(const char *dir, const char *const *extra_sans, fl_pki *out, char **err)
{
    memset(out, 0, sizeof *out);
    if (err)
        *err = NULL;

    char *pki = fl_asprintf("%s/pki", dir);
    char *ca_crt = fl_asprintf("%s/ca.crt", pki), *ca_key_p = fl_asprintf("%s/ca.key", pki);
    char *srv_crt = fl_asprintf("%s/server.crt", pki), *srv_key_p = fl_asprintf("%s/server.key", pki);
    char *tok_p = fl_asprintf("%s/admin.token", pki), *sa_key_p = fl_asprintf("%s/sa.key", pki);
    EVP_PKEY *ca_key = NULL, *srv_key = NULL;
    X509 *ca = NULL, *srv = NULL;
    san *sans = NULL;
    size_t nsans = 0;
    int rc;

    if ((rc = wanted_sans(extra_sans, &sans, &nsans, err)))
        goto out;
    if ((rc = check_secrets_private(pki, err)))
        goto out;
    if (mkdir_p(pki) < 0) {
        rc = fail(err, "pki: cannot create %s: %s", pki, strerror(errno));
        goto out;
    }
    /* The directory holds private keys: whoever created it, it is ours. */
    if (chmod(pki, 0700) < 0) {
        rc = fail(err, "pki: cannot set mode 0700 on %s: %s", pki, strerror(errno));
        goto out;
    }

    /* The CA. Both files or neither: a key without its certificate is what a crash
     * between the two writes leaves behind, and nothing can have trusted it yet. */
    int krc = load_key(ca_key_p, &ca_key), crc = load_cert(ca_crt, &ca);
    if (krc == FL_EINVAL || crc == FL_EINVAL) {
        rc = fail(err, "pki: %s is damaged; delete %s and %s to create a new CA "
                       "(clients must then be given the new kubeconfig)",
                  krc == FL_EINVAL ? ca_key_p : ca_crt, ca_key_p, ca_crt);
        goto out;
    }
    if ((krc && krc != FL_ENOTFOUND) || (crc && crc != FL_ENOTFOUND)) {
        rc = fail(err, "pki: cannot read %s: %s", krc ? ca_key_p : ca_crt, strerror(errno));
        goto out;
    }
    if (krc == 0 && crc == 0 && X509_check_private_key(ca, ca_key) != 1) {
        rc = fail(err, "pki: %s does not match %s; restore the pair or delete both to create a new CA",
                  ca_key_p, ca_crt);
        goto out;
    }
    if (krc || crc) {
        if (krc == 0 || crc == 0)
            fl_log(FL_LOG_WARN, "pki", "%s without %s; creating a new CA",
                   krc == 0 ? ca_key_p : ca_crt, krc == 0 ? ca_crt : ca_key_p);
        EVP_PKEY_free(ca_key);
        X509_free(ca);
        ca = NULL;
        if (!(ca_key = new_key()) || !(ca = make_ca(ca_key))) {
            rc = fail(err, "pki: cannot generate the CA");
            goto out;
        }
        if ((rc = save_pair(ca_key_p, ca_key, ca_crt, ca, err)))
            goto out;
        fl_log(FL_LOG_INFO, "pki", "created CA %s", ca_crt);
    } else {
        time_t now = time(NULL);
        if (X509_cmp_time(X509_get0_notAfter(ca), &now) <= 0)
            fl_log(FL_LOG_WARN, "pki", "CA %s has expired; delete %s and %s to create a new one",
                   ca_crt, ca_crt, ca_key_p);
    }

    /* The serving certificate: anything wrong with it is fixed by reissuing. */
    krc = load_key(srv_key_p, &srv_key);
    crc = load_cert(srv_crt, &srv);
    const char *why = NULL;
    if (krc || crc)
        why = (krc == FL_ENOTFOUND || crc == FL_ENOTFOUND) ? "is missing" : "is unreadable";
    else
        why = server_cert_problem(srv, srv_key, ca_key, sans, nsans);
    ERR_clear_error();
    if (why) {
        if (krc != FL_ENOTFOUND || crc != FL_ENOTFOUND)
            fl_log(FL_LOG_INFO, "pki", "serving certificate %s %s; reissuing", srv_crt, why);
        EVP_PKEY_free(srv_key);
        X509_free(srv);
        srv = NULL;
        if (!(srv_key = new_key()) || !(srv = make_server(srv_key, ca, ca_key, sans, nsans))) {
            rc = fail(err, "pki: cannot issue the serving certificate");
            goto out;
        }
        if ((rc = save_pair(srv_key_p, srv_key, srv_crt, srv, err)))
            goto out;
    }

    if ((rc = ensure_token(tok_p, &out->admin_token, err)))
        goto out;
    if ((rc = ensure_sa_key(sa_key_p, &out->sa_key_pem, err)))
        goto out;

    /* Hand back normalised PEM (re-encoded from the parsed objects), so a key the
     * user dropped in as "BEGIN EC PRIVATE KEY" still reaches GnuTLS as PKCS#8. */
    out->ca_cert_pem = cert_to_pem(ca);
    out->server_cert_pem = cert_to_pem(srv);
    out->server_key_pem = key_to_pem(srv_key);
    out->ca_key_pem = key_to_pem(ca_key);
    if (!out->ca_cert_pem || !out->server_cert_pem || !out->server_key_pem || !out->ca_key_pem) {
        rc = fail(err, "pki: cannot encode certificates as PEM");
        goto out;
    }
    rc = 0;

out:
    if (rc)
        fl_pki_close(out);
    ERR_clear_error();
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(srv_key);
    X509_free(ca);
    X509_free(srv);
    free(sans);
    free(pki);
    free(ca_crt);
    free(ca_key_p);
    free(srv_crt);
    free(srv_key_p);
    free(tok_p);
    free(sa_key_p);
    return rc;
}

static void free_secret(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

void fl_pki_close(fl_pki *p)
{
    if (!p)
        return;
    free(p->ca_cert_pem);
    free(p->server_cert_pem);
    free_secret(p->server_key_pem);
    free_secret(p->admin_token);
    free_secret(p->ca_key_pem);
    free_secret(p->sa_key_pem);
    memset(p, 0, sizeof *p);
}

/* ---------- tokens ---------- */

/* Returns 1 if equal and non-empty, else 0. Any thread.
 * Compares SHA-256 digests with CRYPTO_memcmp, so the time taken depends on
 * neither the position of the first difference nor the secret's length. */
int fl_token_equal(const char *a, const char *b)
{
    if (!a || !b || !*a || !*b)
        return 0; /* an unset token never matches, not even another empty one */
    unsigned char da[SHA256_DIGEST_LENGTH], db[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)a, strlen(a), da);
    SHA256((const unsigned char *)b, strlen(b), db);
    return CRYPTO_memcmp(da, db, sizeof da) == 0;
}

/* ---------- client certificates ---------- */

static X509 *cert_from_pem(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return x;
}

static EVP_PKEY *key_from_pem(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return k;
}

/* Copy the CN and every O of the request's subject into name, in that order: nothing else
 * of what a requester asks for reaches the certificate. */
static int copy_subject(X509_NAME *from, X509_NAME *to, char **err)
{
    int cn = X509_NAME_get_index_by_NID(from, NID_commonName, -1);
    if (cn < 0)
        return fail(err, "the request's subject has no common name (CN): it names the user");
    if (X509_NAME_get_index_by_NID(from, NID_commonName, cn) >= 0)
        return fail(err, "the request's subject has more than one common name (CN)");
    X509_NAME_ENTRY *e = X509_NAME_get_entry(from, cn);
    if (X509_NAME_add_entry(to, e, -1, 0) != 1)
        return fail(err, "cannot copy the request's subject");
    for (int i = X509_NAME_get_index_by_NID(from, NID_organizationName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(from, NID_organizationName, i))
        if (X509_NAME_add_entry(to, X509_NAME_get_entry(from, i), -1, 0) != 1)
            return fail(err, "cannot copy the request's organizations (O)");
    return 0;
}

int fl_pki_sign_client(const char *ca_cert_pem, const char *ca_key_pem, const char *csr_pem, long long seconds,
                       char **cert_pem, char **err)
{
    *cert_pem = NULL;
    if (err)
        *err = NULL;
    X509 *ca = cert_from_pem(ca_cert_pem), *x = NULL;
    EVP_PKEY *ca_key = key_from_pem(ca_key_pem), *pub = NULL;
    X509_REQ *req = NULL;
    int rc = FL_EIO;
    if (!ca || !ca_key) {
        rc = fail(err, "pki: the CA certificate or key cannot be read");
        goto out;
    }
    BIO *b = BIO_new_mem_buf(csr_pem, -1);
    req = b ? PEM_read_bio_X509_REQ(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!req || !(pub = X509_REQ_get_pubkey(req)) || X509_REQ_verify(req, pub) != 1) {
        fail(err, "not a PEM certificate request (\"BEGIN CERTIFICATE REQUEST\") signed by its own key");
        rc = FL_EINVAL;
        goto out;
    }
    if (seconds < FL_PKI_CLIENT_MIN_SECONDS) {
        fail(err, "may not specify a duration less than %d seconds", FL_PKI_CLIENT_MIN_SECONDS);
        rc = FL_EINVAL;
        goto out;
    }
    /* never past the CA: a certificate its issuer outlives is all a client can check */
    time_t now = time(NULL), until = now + (time_t)seconds;
    if (X509_cmp_time(X509_get0_notAfter(ca), &until) < 0) {
        int days = 0, secs = 0;
        if (ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(ca)) == 1 && days >= 0 && secs >= 0)
            until = now + (time_t)days * 86400 + secs;
    }
    if (!(x = X509_new()) || X509_set_version(x, X509_VERSION_3) != 1 || set_random_serial(x) < 0 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_SECS) ||
        !X509_time_adj_ex(X509_getm_notAfter(x), 0, (long)(until - now), NULL) || X509_set_pubkey(x, pub) != 1 ||
        X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1) {
        rc = fail(err, "pki: cannot build the client certificate");
        goto out;
    }
    if ((rc = copy_subject(X509_REQ_get_subject_name(req), X509_get_subject_name(x), err))) {
        rc = FL_EINVAL;
        goto out;
    }
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
    if (add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment") < 0 ||
        add_ext(x, &ctx, NID_ext_key_usage, "clientAuth") < 0 ||
        add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") < 0 || X509_sign(x, ca_key, EVP_sha256()) <= 0) {
        rc = fail(err, "pki: cannot sign the client certificate");
        goto out;
    }
    if (!(*cert_pem = cert_to_pem(x))) {
        rc = fail(err, "pki: cannot encode the client certificate");
        goto out;
    }
    rc = 0;
out:
    ERR_clear_error();
    X509_free(ca);
    X509_free(x);
    X509_REQ_free(req);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(pub);
    return rc;
}
