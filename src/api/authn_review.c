/* authn_review.c - SelfSubjectReview and TokenReview (see authn_review.h).
 *
 * Both answer with the request's object and a status: the user's name, uid and groups as
 * authentication found them (userInfo, or user with authenticated: true). A TokenReview that
 * does not authenticate is still a 201 with authenticated false and an error, as in
 * kube-apiserver: the review succeeded, the token did not. */
#include "api/authn_review.h"

#include <string.h>

#include "api/api_internal.h"
#include "api/auth.h"
#include "api/authn_x509.h"
#include "api/jwt.h"
#include "api/sa_token.h"
#include "api/tls.h"
#include "api/validate.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/mem.h"

#define GROUP "authentication.k8s.io"
#define PREFIX "/apis/" GROUP "/v1/"

bool fl_authn_is_review_path(const char *path)
{
    return path && (!strcmp(path, PREFIX "selfsubjectreviews") || !strcmp(path, PREFIX "tokenreviews") ||
                    !strcmp(path, FL_X509_SIGN_PATH));
}

static json_t *user_info(const fl_identity *who)
{
    json_t *groups = json_array();
    for (size_t i = 0; who && i < who->ngroups; i++)
        json_array_append_new(groups, json_string(who->groups[i]));
    json_t *u = json_pack("{s:s, s:o}", "username", who ? who->user : "", "groups", groups);
    if (who && who->uid[0])
        json_object_set_new(u, "uid", json_string(who->uid));
    return u;
}

/* The request's body as an object of the right kind; NULL after answering 400. */
static json_t *review_body(fl_req *r, const fl_target *t, const char *kind)
{
    json_t *body = fl_req_body_object(r, t);
    if (!body)
        return NULL;
    const char *k = json_string_value(json_object_get(body, "kind"));
    const char *av = json_string_value(json_object_get(body, "apiVersion"));
    if ((k && strcmp(k, kind)) || (av && strcmp(av, GROUP "/v1"))) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the body must be a %s of apiVersion %s/v1", kind, GROUP);
        json_decref(body);
        return NULL;
    }
    return body;
}

static void self_review(fl_req *r, const fl_target *t)
{
    json_t *body = review_body(r, t, "SelfSubjectReview");
    if (!body)
        return;
    json_decref(body);
    json_t *resp = json_pack("{s:s, s:s, s:{s:n}, s:{s:o}}", "kind", "SelfSubjectReview", "apiVersion", GROUP "/v1",
                             "metadata", "creationTimestamp", "status", "userInfo", user_info(r->who));
    fl_resp_json(r, 201, resp);
}

/* Does the API accept a token that is not audience-bound for these audiences? Only when one
 * of them is the API's own (kube-apiserver treats such tokens as for its audiences). */
static bool api_audience(fl_sa_tokens *sa, const json_t *auds)
{
    if (!json_array_size(auds))
        return true;
    const char *const *mine = sa ? fl_sa_tokens_audiences(sa) : NULL;
    size_t i;
    const json_t *a;
    json_array_foreach(auds, i, a)
        for (size_t k = 0; mine && mine[k]; k++)
            if (json_is_string(a) && !strcmp(json_string_value(a), mine[k]))
                return true;
    return false;
}

static void token_review(fl_api *api, fl_req *r, const fl_target *t)
{
    if (!fl_auth_authorize(api->auth, r, "create", t))
        return;
    json_t *body = review_body(r, t, "TokenReview");
    if (!body)
        return;
    const json_t *spec = json_object_get(body, "spec");
    const char *token = json_string_value(json_object_get(spec, "token"));
    const json_t *auds = json_object_get(spec, "audiences");
    if (!token || !token[0]) {
        json_t *causes = json_array();
        fl_cause_add(causes, "FieldValueRequired", "spec.token", "Required value");
        fl_resp_status(r, 422, "Invalid", t, causes, "TokenReview.authentication.k8s.io is invalid: spec.token: "
                                                      "Required value");
        json_decref(body);
        return;
    }
    if (auds && !json_is_null(auds) && !json_is_array(auds)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "spec.audiences: must be a list of strings");
        json_decref(body);
        return;
    }
    fl_sa_tokens *sa = fl_auth_sa_tokens(api->auth);
    const char *asked[FL_SA_AUDIENCES_MAX];
    size_t nasked = 0, i;
    const json_t *a;
    json_array_foreach(auds, i, a)
        if (json_is_string(a) && nasked < FL_SA_AUDIENCES_MAX)
            asked[nasked++] = json_string_value(a);
    fl_identity who;
    bool ok;
    json_t *got_auds = json_array();
    if (sa && fl_jwt_looks_like(token)) {
        /* a ServiceAccount token: for the audiences asked, else the API's */
        ok = fl_sa_tokens_authenticate(sa, token, nasked ? asked : NULL, nasked, &who, NULL) == 0;
        if (ok && nasked)
            json_array_extend(got_auds, (json_t *)auds);
    } else {
        /* any other token is not audience-bound: it is for the API's audiences only */
        ok = fl_auth_authenticate(api->auth, token, &who) == 0 && api_audience(sa, auds);
    }
    for (size_t k = 0; ok && sa && !json_array_size(got_auds) && fl_sa_tokens_audiences(sa)[k]; k++)
        json_array_append_new(got_auds, json_string(fl_sa_tokens_audiences(sa)[k]));
    json_t *status = ok ? json_pack("{s:b, s:o, s:O}", "authenticated", 1, "user", user_info(&who), "audiences",
                                    got_auds)
                        : json_pack("{s:b, s:{}, s:s}", "authenticated", 0, "user", "error",
                                    "invalid bearer token, token lookup failed");
    json_decref(got_auds);
    json_t *resp = json_pack("{s:s, s:s, s:{s:n}, s:{s:s}, s:o}", "kind", "TokenReview", "apiVersion", GROUP "/v1",
                             "metadata", "creationTimestamp", "spec", "token", token, "status", status);
    if (json_array_size(auds))
        json_object_set(json_object_get(resp, "spec"), "audiences", (json_t *)auds);
    json_decref(body);
    fl_resp_json(r, 201, resp);
}

/* POST FL_X509_SIGN_PATH: a client certificate for the request in spec.request (authn_x509.h).
 * Whoever may create clientcertificates.flotilla.io may become any user: system:masters by
 * default, like approving a kube-apiserver-client CertificateSigningRequest. */
static void sign_client(fl_api *api, fl_req *r, fl_target *t)
{
    snprintf(t->group, sizeof t->group, "flotilla.io");
    snprintf(t->version, sizeof t->version, "v1alpha1");
    if (!fl_auth_authorize(api->auth, r, "create", t))
        return;
    json_t *body = fl_req_body_object(r, t);
    if (!body)
        return;
    const json_t *spec = json_object_get(body, "spec");
    const char *req64 = json_string_value(json_object_get(spec, "request"));
    const json_t *exp = json_object_get(spec, "expirationSeconds");
    json_t *causes = json_array();
    char *csr = req64 ? fl_base64_decode(req64, NULL) : NULL;
    if (!csr)
        fl_cause_add(causes, "FieldValueRequired", "spec.request",
                     "Required value: the base64 of a PEM certificate request");
    if (exp && !json_is_null(exp) && !json_is_integer(exp))
        fl_cause_add(causes, "FieldValueInvalid", "spec.expirationSeconds", "Invalid value: must be an integer");
    long long seconds = json_is_integer(exp) ? (long long)json_integer_value(exp) : FL_PKI_CLIENT_DEFAULT_SECONDS;
    char *cert = NULL, *err = NULL;
    int rc = 0;
    if (!json_array_size(causes)) {
        rc = fl_x509_authn_sign(fl_auth_x509(api->auth), csr, seconds, &cert, &err);
        if (rc == FL_EINVAL)
            fl_cause_add(causes, "FieldValueInvalid", strstr(err, "duration") ? "spec.expirationSeconds" : "spec.request",
                         "Invalid value: %s", err);
    }
    if (json_array_size(causes)) {
        const json_t *c0 = json_array_get(causes, 0);
        fl_resp_status(r, 422, "Invalid", t, causes, "ClientCertificate.flotilla.io is invalid: %s: %s",
                       json_string_value(json_object_get(c0, "field")), json_string_value(json_object_get(c0, "message")));
        causes = NULL;
    } else if (rc) {
        fl_resp_status(r, rc == FL_EUNSUPPORTED ? 404 : 500, rc == FL_EUNSUPPORTED ? "NotFound" : "InternalError", t,
                       NULL, "%s", err ? err : "cannot sign");
    } else {
        char *cert64 = fl_base64_encode(cert, strlen(cert));
        json_t *resp = json_pack("{s:s, s:s, s:{s:n}, s:O, s:{s:s}}", "kind", "ClientCertificate", "apiVersion",
                                 "flotilla.io/v1alpha1", "metadata", "creationTimestamp", "spec",
                                 spec ? spec : json_null(), "status", "certificate", cert64);
        free(cert64);
        fl_resp_json(r, 201, resp);
    }
    json_decref(causes);
    free(csr);
    free(cert);
    free(err);
    json_decref(body);
}

void fl_authn_review(fl_api *api, fl_req *r)
{
    if (!strcmp(r->path, FL_X509_SIGN_PATH)) {
        fl_target t;
        memset(&t, 0, sizeof t);
        snprintf(t.resource, sizeof t.resource, "clientcertificates");
        snprintf(r->resource, sizeof r->resource, "%s", t.resource);
        if (!r->method || strcmp(r->method, "POST"))
            fl_resp_status(r, 405, "MethodNotAllowed", &t, NULL, "clientcertificates only accepts create (POST)");
        else
            sign_client(api, r, &t);
        return;
    }
    bool self = strstr(r->path, "selfsubjectreviews") != NULL;
    fl_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.group, sizeof t.group, "%s", GROUP);
    snprintf(t.version, sizeof t.version, "v1");
    snprintf(t.resource, sizeof t.resource, "%s", self ? "selfsubjectreviews" : "tokenreviews");
    snprintf(r->resource, sizeof r->resource, "%s", t.resource);
    if (!r->method || strcmp(r->method, "POST")) {
        fl_resp_status(r, 405, "MethodNotAllowed", &t, NULL, "%s only accepts create (POST)", t.resource);
        return;
    }
    /* the caller's own identity is no secret to them: every authenticated one may ask */
    if (self && r->who && !fl_identity_in_group(r->who, FL_AUTH_GROUP_AUTHENTICATED) &&
        !fl_auth_authorize(api->auth, r, "create", &t))
        return;
    if (self)
        self_review(r, &t);
    else
        token_review(api, r, &t);
}
