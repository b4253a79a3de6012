/* sa_token.h - ServiceAccount tokens as kube-apiserver issues and accepts them: the
 * TokenRequest subresource (POST /api/v1/namespaces/NS/serviceaccounts/NAME/token, what
 * `kubectl create token` calls) signs a JWT (jwt.h, ES256 with DIR/pki/sa.key) naming the
 * ServiceAccount; a bearer token of that shape authenticates as
 * system:serviceaccount:NS:NAME, groups system:serviceaccounts and system:serviceaccounts:NS.
 *
 * A token is accepted while its signature verifies, its issuer is ours, one of its audiences is
 * one of the API's (--api-audiences, by default the issuer), it is within exp/nbf (a minute of
 * leeway for clocks), and the ServiceAccount it names still exists with the uid in the token
 * and is not being deleted - and so does the Pod or Secret it is bound to, if any. Deleting the
 * ServiceAccount (or recreating it: a new uid) revokes every token issued for it, on the next
 * request: the lookups read the store's memory each time. Only the signature and claims check
 * of a token is remembered (by its SHA-256, a minute at most, never past exp plus leeway).
 *
 * Threads: every function may be called from any thread, concurrently, except _free. */
#ifndef FL_SA_TOKEN_H
#define FL_SA_TOKEN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"
#include "api/auth.h"

struct fl_target;
typedef struct fl_sa_tokens fl_sa_tokens;

/* kube-apiserver's defaults and bounds (TokenRequest's spec.expirationSeconds). */
#define FL_SA_DEFAULT_ISSUER "https://kubernetes.default.svc"
#define FL_SA_MIN_SECONDS 600LL
#define FL_SA_DEFAULT_SECONDS 3600LL
#define FL_SA_MAX_SECONDS (1LL << 32)
#define FL_SA_LEEWAY_SECONDS 60
#define FL_SA_AUDIENCES_MAX 8
#define FL_SA_AUDIENCE_MAX 256

typedef struct fl_sa_config {
    const char *key_pem;          /* the signing key (PEM, EC P-256): DIR/pki/sa.key */
    const char *issuer;           /* --service-account-issuer; NULL = FL_SA_DEFAULT_ISSUER */
    const char *audiences;        /* --api-audiences, comma-separated; NULL or "" = the issuer */
    long long max_seconds;        /* --service-account-max-token-expiration; 0 = FL_SA_MAX_SECONDS */
} fl_sa_config;

/* Tokens for api (not owned; must outlive them). *out set on every path. Returns 0, or
 * FL_EINVAL with *err (heap) when the key is not an EC P-256 private key or an audience is
 * empty or too long, or there are too many. */
int fl_sa_tokens_new(fl_api *api, const fl_sa_config *cfg, fl_sa_tokens **out, char **err);
/* NULL-safe. No request may be running. */
void fl_sa_tokens_free(fl_sa_tokens *s);

/* Who holds token? audiences (naud of them) are the audiences the token must be for; NULL =
 * the API's own. 0 with *who set, or FL_ENOTFOUND (*who all empty) with *why (static; why may
 * be NULL) saying why the token was refused. */
int fl_sa_tokens_authenticate(fl_sa_tokens *s, const char *token, const char *const *audiences, size_t naud,
                              fl_identity *who, const char **why);
/* The API's audiences (for TokenReview): a NULL-terminated array owned by s. */
const char *const *fl_sa_tokens_audiences(const fl_sa_tokens *s);

/* Serve POST .../serviceaccounts/NAME/token (t addresses it; authorization has been done): a
 * TokenRequest in the body, answered 201 with status.token and status.expirationTimestamp;
 * 404 for a ServiceAccount (or bound object) that does not exist, 422 naming the field for a
 * bad spec. */
void fl_sa_token_request(fl_sa_tokens *s, fl_req *r, const struct fl_target *t);

/* What a token's claims say, once checked (fl_sa_claims_check). */
typedef struct fl_sa_claims {
    char ns[64];
    char name[254];
    char uid[FL_AUTH_UID_MAX];
    char bound_kind[8];  /* "Pod", "Secret" or "" */
    char bound_name[254];
    char bound_uid[FL_AUTH_UID_MAX];
    long long exp, nbf, iat;
} fl_sa_claims;

/* Check claims (a verified token's payload) against issuer, the audiences accepted (one of
 * them must be in "aud"), and the time now (seconds), FL_SA_LEEWAY_SECONDS either way; read
 * the ServiceAccount's namespace, name and uid and the bound object from "kubernetes.io", and
 * check "sub" names the same ServiceAccount. Pure. 0 with *out filled, or FL_EINVAL with *why
 * (static) the first claim that fails ("the token has expired", ...). */
int fl_sa_claims_check(const json_t *claims, const char *issuer, const char *const *audiences, size_t naud,
                       long long now, fl_sa_claims *out, const char **why);

#endif
