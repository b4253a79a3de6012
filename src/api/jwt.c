/* jwt.c - ES256 compact JWS: encoding, parsing and signatures (see jwt.h).
 *
 * OpenSSL signs ECDSA as a DER SEQUENCE of two INTEGERs; JWS wants the two numbers as
 * fixed-width big-endian halves of 32 bytes each. The conversion is done both ways here, and a
 * signature of any other length is refused before OpenSSL sees it. */
#include "api/jwt.h"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

#define SIG_LEN 64 /* r || s, 32 bytes each */

struct fl_jwt_key {
    EVP_PKEY *pkey;
    bool private_key;
    char kid[48];
};

/* ---------------------------------------------------------------- base64url */

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64url of n bytes, appended to out at *pos (out has room: 4 per 3, rounded up). */
static void b64url_put(const unsigned char *in, size_t n, char *out, size_t *pos)
{
    size_t o = *pos;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = B64URL[v >> 18 & 63];
        out[o++] = B64URL[v >> 12 & 63];
        if (i + 1 < n)
            out[o++] = B64URL[v >> 6 & 63];
        if (i + 2 < n)
            out[o++] = B64URL[v & 63];
    }
    out[o] = 0;
    *pos = o;
}

static size_t b64url_len(size_t n)
{
    return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

static int b64url_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Decode n characters of unpadded base64url into a heap buffer (NUL-terminated, *outlen
 * bytes). NULL when a character is outside the alphabet, the length cannot be an encoding, or
 * the unused low bits of the last character are not zero (one encoding per value). */
static unsigned char *b64url_get(const char *s, size_t n, size_t *outlen)
{
    if (n % 4 == 1)
        return NULL;
    unsigned char *out = fl_malloc(n / 4 * 3 + 3);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64url_val(s[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6 | (unsigned)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    if (bits && (acc & ((1u << bits) - 1))) {
        free(out);
        return NULL;
    }
    out[o] = 0;
    *outlen = o;
    return out;
}

/* ---------------------------------------------------------------- keys */

fl_jwt_key *fl_jwt_key_new(const char *pem)
{
    if (!pem)
        return NULL;
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *pk = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    bool priv = pk != NULL;
    if (!pk && b) {
        BIO_reset(b);
        pk = PEM_read_bio_PUBKEY(b, NULL, NULL, NULL);
    }
    BIO_free(b);
    ERR_clear_error();
    char group[32] = "";
    size_t glen = 0;
    if (!pk || !EVP_PKEY_is_a(pk, "EC") ||
        EVP_PKEY_get_utf8_string_param(pk, "group", group, sizeof group, &glen) != 1 || strcmp(group, "prime256v1")) {
        EVP_PKEY_free(pk);
        ERR_clear_error();
        return NULL;
    }
    fl_jwt_key *k = fl_calloc(1, sizeof *k);
    k->pkey = pk;
    k->private_key = priv;
    /* kid: base64url(SHA-256(DER SubjectPublicKeyInfo)) */
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(pk, &der);
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (n <= 0 || EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL) != 1) {
        OPENSSL_free(der);
        fl_jwt_key_free(k);
        return NULL;
    }
    OPENSSL_free(der);
    size_t pos = 0;
    b64url_put(md, mdlen, k->kid, &pos);
    return k;
}

void fl_jwt_key_free(fl_jwt_key *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

const char *fl_jwt_key_id(const fl_jwt_key *k)
{
    return k->kid;
}

/* ---------------------------------------------------------------- signing */

/* DER ECDSA-Sig-Value -> r || s, 32 bytes each. */
static bool der_to_raw(const unsigned char *der, size_t len, unsigned char raw[SIG_LEN])
{
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
    if (!sig)
        return false;
    const BIGNUM *r, *s;
    ECDSA_SIG_get0(sig, &r, &s);
    bool ok = BN_bn2binpad(r, raw, 32) == 32 && BN_bn2binpad(s, raw + 32, 32) == 32;
    ECDSA_SIG_free(sig);
    return ok;
}

/* r || s -> DER, heap (OpenSSL's), *len bytes; NULL on failure. */
static unsigned char *raw_to_der(const unsigned char raw[SIG_LEN], int *len)
{
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    unsigned char *der = NULL;
    *len = 0;
    if (sig && r && s && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL; /* the signature's now */
        *len = i2d_ECDSA_SIG(sig, &der);
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return *len > 0 ? der : NULL;
}

char *fl_jwt_sign(const fl_jwt_key *k, const json_t *claims)
{
    if (!k || !k->private_key || !json_is_object(claims))
        return NULL;
    char *hdr = fl_asprintf("{\"alg\":\"ES256\",\"kid\":\"%s\"}", k->kid);
    char *body = json_dumps(claims, JSON_COMPACT);
    if (!body) {
        free(hdr);
        return NULL;
    }
    size_t hl = strlen(hdr), bl = strlen(body);
    char *out = fl_malloc(b64url_len(hl) + b64url_len(bl) + b64url_len(SIG_LEN) + 3);
    size_t pos = 0;
    b64url_put((const unsigned char *)hdr, hl, out, &pos);
    out[pos++] = '.';
    b64url_put((const unsigned char *)body, bl, out, &pos);
    free(hdr);
    free(body);
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    unsigned char der[80], raw[SIG_LEN];
    size_t dlen = sizeof der;
    bool ok = mc && EVP_DigestSignInit(mc, NULL, EVP_sha256(), NULL, k->pkey) == 1 &&
              EVP_DigestSign(mc, der, &dlen, (const unsigned char *)out, pos) == 1 && der_to_raw(der, dlen, raw);
    EVP_MD_CTX_free(mc);
    ERR_clear_error();
    if (!ok) {
        free(out);
        return NULL;
    }
    out[pos++] = '.';
    b64url_put(raw, SIG_LEN, out, &pos);
    return out;
}

/* ---------------------------------------------------------------- parsing and verifying */

/* Decode one part as a JSON object (duplicate keys refused). */
static json_t *part_object(const char *s, size_t n)
{
    size_t len;
    unsigned char *raw = b64url_get(s, n, &len);
    if (!raw)
        return NULL;
    json_t *v = NULL;
    if (fl_json_loadb((const char *)raw, len, JSON_REJECT_DUPLICATES, &v, NULL) != 0 || !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    free(raw);
    return v;
}

/* Where the dots are: token = p0 '.' p1 '.' p2; false unless exactly two. */
static bool split3(const char *token, size_t len, size_t dot[2])
{
    int nd = 0;
    for (size_t i = 0; i < len; i++) {
        if (token[i] != '.')
            continue;
        if (nd == 2)
            return false;
        dot[nd++] = i;
    }
    return nd == 2;
}

int fl_jwt_parse(const char *token, size_t len, json_t **header, json_t **claims, const char **why)
{
    *header = *claims = NULL;
    size_t dot[2];
    if (!token || !len || len > FL_JWT_MAX_LEN || memchr(token, 0, len)) {
        *why = "empty, too long or not text";
        return FL_EINVAL;
    }
    if (!split3(token, len, dot)) {
        *why = "not three dot-separated parts";
        return FL_EINVAL;
    }
    *header = part_object(token, dot[0]);
    if (*header)
        *claims = part_object(token + dot[0] + 1, dot[1] - dot[0] - 1);
    if (!*header || !*claims) {
        json_decref(*header);
        *header = NULL;
        *why = "a part is not base64url-encoded JSON object";
        return FL_EINVAL;
    }
    return 0;
}

int fl_jwt_verify(const fl_jwt_key *k, const char *token, size_t len, json_t **claims, const char **why)
{
    *claims = NULL;
    json_t *header, *body;
    if (fl_jwt_parse(token, len, &header, &body, why))
        return FL_EINVAL;
    int rc = FL_EINVAL;
    const char *alg = json_string_value(json_object_get(header, "alg"));
    const json_t *kid = json_object_get(header, "kid");
    const json_t *crit = json_object_get(header, "crit");
    size_t dot[2];
    split3(token, len, dot);
    size_t slen = 0;
    unsigned char *sig = NULL, *der = NULL;
    if (!alg || strcmp(alg, "ES256")) {
        *why = "the signing algorithm is not ES256";
        goto out;
    }
    if (crit) { /* no extension is understood here, so none may be critical */
        *why = "the header names critical extensions";
        goto out;
    }
    if (kid && (!json_is_string(kid) || strcmp(json_string_value(kid), k->kid))) {
        *why = "signed with another key (kid)";
        goto out;
    }
    sig = b64url_get(token + dot[1] + 1, len - dot[1] - 1, &slen);
    if (!sig || slen != SIG_LEN) {
        *why = "the signature is not 64 bytes of base64url";
        goto out;
    }
    int dlen;
    der = raw_to_der(sig, &dlen);
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    bool ok = der && mc && EVP_DigestVerifyInit(mc, NULL, EVP_sha256(), NULL, k->pkey) == 1 &&
              EVP_DigestVerify(mc, der, (size_t)dlen, (const unsigned char *)token, dot[1]) == 1;
    EVP_MD_CTX_free(mc);
    ERR_clear_error();
    if (!ok) {
        *why = "the signature does not verify";
        goto out;
    }
    *claims = json_incref(body);
    rc = 0;
out:
    OPENSSL_free(der);
    free(sig);
    json_decref(header);
    json_decref(body);
    return rc;
}

bool fl_jwt_looks_like(const char *token)
{
    if (!token || strncmp(token, "eyJ", 3))
        return false;
    const char *d1 = strchr(token, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    return d2 && !strchr(d2 + 1, '.');
}
