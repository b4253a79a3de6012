/* fuzz_jwt.c - libFuzzer target for the bearer-token parsers: src/api/jwt.c (compact JWS,
 * base64url, the header) and the ServiceAccount claims check of src/api/sa_token.c.
 *
 * The bytes are a bearer token as a client would send it. fl_jwt_parse splits and decodes
 * it; whatever parses has its claims checked (as if the signature had verified, so the claims
 * code sees hostile objects too); fl_jwt_verify must refuse everything but a token signed with
 * the key, which random bytes never are. A success must hand back claims and no reason, a
 * failure no claims and a reason. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "api/jwt.h"
#include "core/mem.h"
#include "api/sa_token.h"
#include "core/err.h"

static fl_jwt_key *key;

static void setup(void)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *pem = fl_strndup(data, (size_t)n); /* no NUL after the BIO's bytes */
    key = fl_jwt_key_new(pem);
    free(pem);
    BIO_free(b);
    EVP_PKEY_free(k);
    if (!key)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!key)
        setup();
    const char *tok = (const char *)data;
    json_t *header = NULL, *claims = NULL;
    const char *why = NULL;
    int rc = fl_jwt_parse(tok, size, &header, &claims, &why);
    if ((rc == 0) != (header != NULL) || (rc == 0) != (claims != NULL) || (rc != 0 && !why))
        abort();
    if (claims) {
        static const char *const auds[] = {FL_SA_DEFAULT_ISSUER, "vault"};
        fl_sa_claims c;
        why = NULL;
        rc = fl_sa_claims_check(claims, FL_SA_DEFAULT_ISSUER, auds, 2, 1700000000, &c, &why);
        if ((rc == 0) == (why != NULL))
            abort();
        if (rc == 0 && (!c.ns[0] || !c.name[0] || !c.uid[0]))
            abort();
    }
    json_decref(header);
    json_decref(claims);
    json_t *verified = NULL;
    why = NULL;
    if (fl_jwt_verify(key, tok, size, &verified, &why) == 0 || verified || !why)
        abort();
    /* the NUL-terminated path the authenticator takes */
    char *z = fl_strndup(tok, size); /* the fuzz input has no NUL after it */
    (void)fl_jwt_looks_like(z);
    free(z);
    return 0;
}
