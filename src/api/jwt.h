/* jwt.h - JSON Web Tokens as ServiceAccount tokens use them: compact JWS (RFC 7515) signed
 * with ES256 (ECDSA P-256, SHA-256; RFC 7518 3.4), header {"alg":"ES256","kid":...}.
 *
 * The key id is what kube-apiserver derives for its keys: the unpadded base64url SHA-256 of
 * the public key's DER (SubjectPublicKeyInfo), so a verifier that fetches the JWKS can match
 * it. Parsing is strict - three base64url parts without padding, JSON objects for the header
 * and the claims, duplicate keys refused, a 64-byte signature - because every byte of a
 * bearer token comes from whoever sent it (tests/fuzz/fuzz_jwt.c).
 *
 * Pure functions over caller memory, and a key that is read-only once made: any thread. */
#ifndef FL_JWT_H
#define FL_JWT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The largest token looked at: anything longer is refused before decoding. */
#define FL_JWT_MAX_LEN 16384

typedef struct fl_jwt_key fl_jwt_key;

/* A key from PEM: a private key (signs and verifies) or a public key (verifies). Only EC
 * P-256 keys. Returns the key, or NULL when pem is not one. Free with fl_jwt_key_free. */
fl_jwt_key *fl_jwt_key_new(const char *pem);
/* NULL-safe. */
void fl_jwt_key_free(fl_jwt_key *k);
/* The key's id (43 base64url characters; the key's). */
const char *fl_jwt_key_id(const fl_jwt_key *k);

/* Sign claims (an object) into a compact JWS. Returns a heap string, or NULL when k has no
 * private key or claims cannot be encoded. */
char *fl_jwt_sign(const fl_jwt_key *k, const json_t *claims);

/* Split token into its decoded header and claims without checking the signature (the fuzz
 * target and fl_jwt_verify use it). Returns 0 with *header and *claims (new references) set,
 * or FL_EINVAL with both NULL and *why (static) saying what is malformed. */
int fl_jwt_parse(const char *token, size_t len, json_t **header, json_t **claims, const char **why);

/* Parse token and check it is signed by k (alg ES256; a kid, when the header has one, must be
 * k's). Returns 0 with *claims (new reference) set, or FL_EINVAL with *claims NULL and *why
 * (static) the reason. */
int fl_jwt_verify(const fl_jwt_key *k, const char *token, size_t len, json_t **claims, const char **why);

/* Does token have the shape of a JWT (three dot-separated parts, the first starting with the
 * encoding of '{')? Cheap: for telling a JWT from an opaque token before looking it up. */
bool fl_jwt_looks_like(const char *token);

#endif
