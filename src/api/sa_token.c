/* sa_token.c - ServiceAccount tokens: TokenRequest, and authenticating what it issued (see
 * sa_token.h).
 *
 * The claims are kube-apiserver's (pkg/serviceaccount's "private claims"): iss, sub
 * "system:serviceaccount:NS:NAME", aud (always an array), exp, iat, nbf, jti, and
 * "kubernetes.io": {namespace, serviceaccount {name, uid}, pod|secret {name, uid}}. The
 * ServiceAccount's uid is what makes a token die with its ServiceAccount: a new one of the
 * same name has another uid. Tokens are not stored anywhere; revocation is the lookup. */
#include "api/sa_token.h"

#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"
#include "api/jwt.h"
#include "api/validate.h"
#include "core/err.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/random.h"
#include "core/timefmt.h"

#define SUB_PREFIX "system:serviceaccount:"
#define GROUP_ALL "system:serviceaccounts"
#define CLAIMS_KEY "kubernetes.io"

/* A token whose signature and claims passed, by its SHA-256, for a minute at most (and never
 * past its exp): checking an ES256 signature costs about a tenth of a millisecond, and a
 * workload sends the same token with every request. The ServiceAccount is still looked up
 * each time: that is what revokes. */
#define CACHE_SLOTS 64
#define CACHE_TTL_S 60

typedef struct cached {
    unsigned char digest[32];
    long long until; /* 0: empty */
    fl_sa_claims claims;
} cached;

struct fl_sa_tokens {
    pthread_mutex_t mu; /* guards cache */
    cached cache[CACHE_SLOTS];
    fl_api *api;
    fl_jwt_key *key;
    char *issuer;
    char *audiences[FL_SA_AUDIENCES_MAX + 1]; /* NULL-terminated */
    size_t naud;
    long long max_seconds;
};

int fl_sa_tokens_new(fl_api *api, const fl_sa_config *cfg, fl_sa_tokens **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    fl_sa_tokens *s = fl_calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->api = api;
    s->key = fl_jwt_key_new(cfg->key_pem);
    s->issuer = fl_strdup(cfg->issuer && cfg->issuer[0] ? cfg->issuer : FL_SA_DEFAULT_ISSUER);
    s->max_seconds = cfg->max_seconds > 0 ? cfg->max_seconds : FL_SA_MAX_SECONDS;
    const char *why = NULL;
    if (!s->key)
        why = "the ServiceAccount signing key is not an EC P-256 key";
    else if (cfg->max_seconds && cfg->max_seconds < FL_SA_MIN_SECONDS)
        why = "--service-account-max-token-expiration: at least 10 minutes";
    const char *p = cfg->audiences && cfg->audiences[0] ? cfg->audiences : s->issuer;
    while (!why && *p) {
        size_t n = strcspn(p, ",");
        if (!n || n >= FL_SA_AUDIENCE_MAX)
            why = "--api-audiences: an audience is empty or longer than 255 characters";
        else if (s->naud == FL_SA_AUDIENCES_MAX)
            why = "--api-audiences: at most 8 audiences";
        else
            s->audiences[s->naud++] = fl_strndup(p, n);
        p += n + (p[n] == ',');
    }
    if (why) {
        if (err)
            *err = fl_strdup(why);
        fl_sa_tokens_free(s);
        return FL_EINVAL;
    }
    *out = s;
    return 0;
}

void fl_sa_tokens_free(fl_sa_tokens *s)
{
    if (!s)
        return;
    fl_jwt_key_free(s->key);
    pthread_mutex_destroy(&s->mu);
    free(s->issuer);
    for (size_t i = 0; i < s->naud; i++)
        free(s->audiences[i]);
    free(s);
}

const char *const *fl_sa_tokens_audiences(const fl_sa_tokens *s)
{
    return (const char *const *)s->audiences;
}

/* ---------------------------------------------------------------- claims */

/* A NumericDate claim: a JSON number of seconds (a fraction is dropped), in range. */
static bool numeric_date(const json_t *claims, const char *name, long long *out)
{
    const json_t *v = json_object_get(claims, name);
    if (json_is_integer(v)) {
        *out = (long long)json_integer_value(v);
    } else if (json_is_real(v) && isfinite(json_real_value(v)) && fabs(json_real_value(v)) < 1e15) {
        *out = (long long)json_real_value(v);
    } else {
        return false;
    }
    return *out >= 0 && *out < (1LL << 50);
}

/* obj[key] as a non-empty string that fits cap (NUL included), copied into out. */
static bool str_claim(const json_t *obj, const char *key, char *out, size_t cap)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v || !v[0] || strlen(v) >= cap)
        return false;
    memcpy(out, v, strlen(v) + 1);
    return true;
}

static bool audience_ok(const json_t *aud, const char *const *audiences, size_t naud)
{
    /* "aud" may be one string or an array of them (RFC 7519 4.1.3) */
    if (json_is_string(aud)) {
        for (size_t i = 0; i < naud; i++)
            if (!strcmp(json_string_value(aud), audiences[i]))
                return true;
        return false;
    }
    size_t k;
    const json_t *a;
    json_array_foreach(aud, k, a)
        for (size_t i = 0; json_is_string(a) && i < naud; i++)
            if (!strcmp(json_string_value(a), audiences[i]))
                return true;
    return false;
}

int fl_sa_claims_check(const json_t *claims, const char *issuer, const char *const *audiences, size_t naud,
                       long long now, fl_sa_claims *out, const char **why)
{
    memset(out, 0, sizeof *out);
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    if (!iss || strcmp(iss, issuer)) {
        *why = "the token's issuer is not this server";
        return FL_EINVAL;
    }
    if (!audience_ok(json_object_get(claims, "aud"), audiences, naud)) {
        *why = "the token's audiences are not this server's";
        return FL_EINVAL;
    }
    if (!numeric_date(claims, "exp", &out->exp)) {
        *why = "the token has no valid exp";
        return FL_EINVAL;
    }
    if (now > out->exp + FL_SA_LEEWAY_SECONDS) {
        *why = "the token has expired";
        return FL_EINVAL;
    }
    /* nbf and iat are optional, as in kube-apiserver's validation; when present they must not lie ahead */
    if (json_object_get(claims, "nbf") && (!numeric_date(claims, "nbf", &out->nbf) || out->nbf > now + FL_SA_LEEWAY_SECONDS)) {
        *why = "the token is not valid yet (nbf)";
        return FL_EINVAL;
    }
    if (json_object_get(claims, "iat") && (!numeric_date(claims, "iat", &out->iat) || out->iat > now + FL_SA_LEEWAY_SECONDS)) {
        *why = "the token was issued in the future (iat)";
        return FL_EINVAL;
    }
    const json_t *k8s = json_object_get(claims, CLAIMS_KEY);
    const json_t *sa = json_object_get(k8s, "serviceaccount");
    if (!str_claim(k8s, "namespace", out->ns, sizeof out->ns) || !str_claim(sa, "name", out->name, sizeof out->name) ||
        !str_claim(sa, "uid", out->uid, sizeof out->uid)) {
        *why = "the token names no ServiceAccount (kubernetes.io.serviceaccount)";
        return FL_EINVAL;
    }
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    size_t pl = strlen(SUB_PREFIX), nl = strlen(out->ns);
    if (!sub || strncmp(sub, SUB_PREFIX, pl) || strncmp(sub + pl, out->ns, nl) || sub[pl + nl] != ':' ||
        strcmp(sub + pl + nl + 1, out->name)) {
        *why = "the token's subject is not its ServiceAccount";
        return FL_EINVAL;
    }
    static const char *const bound[] = {"pod", "Pod", "secret", "Secret"};
    for (size_t i = 0; i < 4; i += 2) {
        const json_t *b = json_object_get(k8s, bound[i]);
        if (!b)
            continue;
        if (out->bound_kind[0] || !str_claim(b, "name", out->bound_name, sizeof out->bound_name) ||
            !str_claim(b, "uid", out->bound_uid, sizeof out->bound_uid)) {
            *why = "the token's bound object is malformed";
            return FL_EINVAL;
        }
        snprintf(out->bound_kind, sizeof out->bound_kind, "%s", bound[i + 1]);
    }
    return 0;
}

/* ---------------------------------------------------------------- the store */

/* The stored object of a core kind (resource "serviceaccounts", "pods", "secrets"), decoded
 * (new reference), or NULL when there is none. */
static json_t *stored(fl_api *api, const char *resource, const char *ns, const char *name)
{
    const fl_kind *k = fl_kindreg_by_resource(api->kinds, "", "v1", resource);
    if (!k)
        return NULL;
    char *key = fl_obj_key(k, ns, name);
    fl_kv kv = {0};
    json_t *obj = NULL;
    if (fl_store_get(api->store, key, &kv) == 0) {
        obj = fl_api_decoded(kv.value);
        fl_blob_unref(kv.value);
    }
    free(key);
    return obj;
}

/* Does the object exist with this uid, and is it not being deleted? */
static bool alive(fl_api *api, const char *resource, const char *ns, const char *name, const char *uid)
{
    json_t *obj = stored(api, resource, ns, name);
    const char *u = obj ? fl_obj_str(obj, "metadata", "uid") : NULL;
    bool ok = u && !strcmp(u, uid) && !fl_obj_str(obj, "metadata", "deletionTimestamp");
    json_decref(obj);
    return ok;
}

int fl_sa_tokens_authenticate(fl_sa_tokens *s, const char *token, const char *const *audiences, size_t naud,
                              fl_identity *who, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    memset(who, 0, sizeof *who);
    bool api_auds = !audiences; /* only checks for the API's own audiences are remembered */
    if (!audiences) {
        audiences = (const char *const *)s->audiences;
        naud = s->naud;
    }
    long long now = (long long)time(NULL);
    unsigned char digest[32];
    unsigned int dlen = 0;
    bool hashed = EVP_Digest(token, strlen(token), digest, &dlen, EVP_sha256(), NULL) == 1;
    cached *slot = &s->cache[digest[0] % CACHE_SLOTS];
    fl_sa_claims c;
    pthread_mutex_lock(&s->mu);
    bool hit = hashed && api_auds && slot->until > now && !CRYPTO_memcmp(slot->digest, digest, sizeof digest);
    if (hit)
        c = slot->claims;
    pthread_mutex_unlock(&s->mu);
    if (!hit) {
        json_t *claims = NULL;
        int rc = fl_jwt_verify(s->key, token, strlen(token), &claims, why);
        if (!rc)
            rc = fl_sa_claims_check(claims, s->issuer, audiences, naud, now, &c, why);
        json_decref(claims);
        if (rc)
            return FL_ENOTFOUND;
        if (hashed && api_auds) {
            long long until = c.exp + FL_SA_LEEWAY_SECONDS < now + CACHE_TTL_S ? c.exp + FL_SA_LEEWAY_SECONDS
                                                                                : now + CACHE_TTL_S;
            pthread_mutex_lock(&s->mu);
            memcpy(slot->digest, digest, sizeof digest);
            slot->until = until;
            slot->claims = c;
            pthread_mutex_unlock(&s->mu);
        }
    }
    if (!alive(s->api, "serviceaccounts", c.ns, c.name, c.uid)) {
        *why = "the ServiceAccount is gone, being deleted, or another of that name";
        return FL_ENOTFOUND;
    }
    if (c.bound_kind[0] &&
        !alive(s->api, !strcmp(c.bound_kind, "Pod") ? "pods" : "secrets", c.ns, c.bound_name, c.bound_uid)) {
        *why = "the object the token is bound to is gone";
        return FL_ENOTFOUND;
    }
    char user[FL_AUTH_USER_MAX], group[FL_AUTH_GROUP_MAX];
    snprintf(group, sizeof group, "%s:%s", GROUP_ALL, c.ns);
    if ((size_t)snprintf(user, sizeof user, "%s%s:%s", SUB_PREFIX, c.ns, c.name) >= sizeof user ||
        fl_identity_set(who, user, c.uid)) {
        *why = "the ServiceAccount's name is too long for an identity";
        memset(who, 0, sizeof *who);
        return FL_ENOTFOUND;
    }
    fl_identity_add_group(who, GROUP_ALL);
    fl_identity_add_group(who, group);
    fl_identity_add_group(who, FL_AUTH_GROUP_AUTHENTICATED);
    return 0;
}

/* ---------------------------------------------------------------- TokenRequest */

/* The spec of a TokenRequest, checked: audiences (default the API's), seconds, bound object. */
typedef struct token_spec {
    json_t *audiences;        /* array of strings (owned) */
    long long seconds;
    const json_t *bound;      /* spec.boundObjectRef, borrowed from the body, or NULL */
    const char *bound_kind;   /* "Pod" or "Secret" */
} token_spec;

static bool read_spec(fl_sa_tokens *s, const json_t *body, token_spec *ts, json_t *causes)
{
    const json_t *spec = json_object_get(body, "spec");
    ts->audiences = json_array();
    ts->seconds = FL_SA_DEFAULT_SECONDS;
    ts->bound = NULL;
    if (spec && !json_is_object(spec)) {
        fl_cause_add(causes, "FieldValueInvalid", "spec", "Invalid value: must be an object");
        return false;
    }
    const json_t *aud = json_object_get(spec, "audiences");
    size_t i;
    const json_t *a;
    if (aud && !json_is_array(aud) && !json_is_null(aud))
        fl_cause_add(causes, "FieldValueInvalid", "spec.audiences", "Invalid value: must be a list of strings");
    json_array_foreach(aud, i, a) {
        if (!json_is_string(a) || !json_string_length(a) || json_string_length(a) >= FL_SA_AUDIENCE_MAX ||
            json_array_size(ts->audiences) == FL_SA_AUDIENCES_MAX) {
            char field[48];
            snprintf(field, sizeof field, "spec.audiences[%zu]", i);
            fl_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: a non-empty string of at most 255 characters, at most 8 audiences");
            break;
        }
        json_array_append(ts->audiences, (json_t *)a);
    }
    if (!json_array_size(ts->audiences))
        for (i = 0; i < s->naud; i++)
            json_array_append_new(ts->audiences, json_string(s->audiences[i]));
    const json_t *exp = json_object_get(spec, "expirationSeconds");
    if (exp && !json_is_null(exp)) {
        if (!json_is_integer(exp))
            fl_cause_add(causes, "FieldValueInvalid", "spec.expirationSeconds", "Invalid value: must be an integer");
        else if (json_integer_value(exp) < FL_SA_MIN_SECONDS)
            fl_cause_add(causes, "FieldValueInvalid", "spec.expirationSeconds",
                         "Invalid value: %lld: may not specify a duration less than 10 minutes",
                         (long long)json_integer_value(exp));
        else if (json_integer_value(exp) > FL_SA_MAX_SECONDS)
            fl_cause_add(causes, "FieldValueInvalid", "spec.expirationSeconds",
                         "Invalid value: %lld: may not specify a duration larger than 2^32 seconds",
                         (long long)json_integer_value(exp));
        else
            ts->seconds = (long long)json_integer_value(exp);
    }
    /* --service-account-max-token-expiration caps what is asked, as kube-apiserver does */
    if (ts->seconds > s->max_seconds)
        ts->seconds = s->max_seconds;
    const json_t *b = json_object_get(spec, "boundObjectRef");
    if (b && !json_is_null(b)) {
        const char *kind = json_string_value(json_object_get(b, "kind"));
        const char *av = json_string_value(json_object_get(b, "apiVersion"));
        if (!json_is_object(b))
            fl_cause_add(causes, "FieldValueInvalid", "spec.boundObjectRef", "Invalid value: must be an object");
        else if (!kind || (strcmp(kind, "Pod") && strcmp(kind, "Secret")))
            fl_cause_add(causes, "FieldValueNotSupported", "spec.boundObjectRef.kind",
                         "Unsupported value: \"%s\": supported values: \"Pod\", \"Secret\"", kind ? kind : "");
        else if (av && strcmp(av, "v1"))
            fl_cause_add(causes, "FieldValueNotSupported", "spec.boundObjectRef.apiVersion",
                         "Unsupported value: \"%s\": supported values: \"v1\"", av);
        else if (!json_string_value(json_object_get(b, "name")) || !json_string_length(json_object_get(b, "name")))
            fl_cause_add(causes, "FieldValueRequired", "spec.boundObjectRef.name", "Required value");
        else {
            ts->bound = b;
            ts->bound_kind = kind;
        }
    }
    return json_array_size(causes) == 0;
}

/* The first cause's "field: message", for the Status message. */
static void invalid(fl_req *r, const fl_target *t, json_t *causes)
{
    const json_t *c0 = json_array_get(causes, 0);
    fl_resp_status(r, 422, "Invalid", t, causes, "TokenRequest.authentication.k8s.io \"%s\" is invalid: %s: %s",
                   t->name, json_string_value(json_object_get(c0, "field")),
                   json_string_value(json_object_get(c0, "message")));
}

void fl_sa_token_request(fl_sa_tokens *s, fl_req *r, const fl_target *t)
{
    json_t *body = fl_req_body_object(r, t);
    if (!body)
        return;
    json_t *sa = NULL, *bound_obj = NULL, *claims = NULL, *causes = json_array();
    token_spec ts = {0};
    const char *kind = json_string_value(json_object_get(body, "kind"));
    const char *av = json_string_value(json_object_get(body, "apiVersion"));
    if ((kind && strcmp(kind, "TokenRequest")) || (av && strcmp(av, "authentication.k8s.io/v1"))) {
        fl_resp_status(r, 400, "BadRequest", t, NULL,
                       "the body must be a TokenRequest of apiVersion authentication.k8s.io/v1, not %s %s",
                       av ? av : "", kind ? kind : "");
        goto out;
    }
    if (!read_spec(s, body, &ts, causes)) {
        invalid(r, t, causes);
        causes = NULL;
        goto out;
    }
    sa = stored(s->api, "serviceaccounts", t->ns, t->name);
    const char *sa_uid = sa ? fl_obj_str(sa, "metadata", "uid") : NULL;
    if (!sa_uid) {
        fl_resp_status(r, 404, "NotFound", t, NULL, "serviceaccounts \"%s\" not found", t->name);
        goto out;
    }
    const char *bound_uid = NULL;
    if (ts.bound) {
        const char *bname = json_string_value(json_object_get(ts.bound, "name"));
        const char *want_uid = json_string_value(json_object_get(ts.bound, "uid"));
        bound_obj = stored(s->api, !strcmp(ts.bound_kind, "Pod") ? "pods" : "secrets", t->ns, bname);
        bound_uid = bound_obj ? fl_obj_str(bound_obj, "metadata", "uid") : NULL;
        if (!bound_uid) {
            fl_resp_status(r, 404, "NotFound", t, NULL, "%s \"%s\" not found",
                           !strcmp(ts.bound_kind, "Pod") ? "pods" : "secrets", bname);
            goto out;
        }
        if (want_uid && want_uid[0] && strcmp(want_uid, bound_uid)) {
            fl_resp_status(r, 409, "Conflict", t, NULL,
                           "the UID in the bound object reference (%s) does not match the UID in record (%s); the "
                           "object might have been deleted and then recreated", want_uid, bound_uid);
            goto out;
        }
    }
    long long now = (long long)(fl_time_now_ms() / 1000);
    char jti[37], sub[FL_AUTH_USER_MAX + 64];
    fl_random_uuid4(jti);
    snprintf(sub, sizeof sub, "%s%s:%s", SUB_PREFIX, t->ns, t->name);
    claims = json_pack("{s:O, s:I, s:I, s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:I, s:s}", "aud", ts.audiences, "exp",
                       (json_int_t)(now + ts.seconds), "iat", (json_int_t)now, "iss", s->issuer, "jti", jti,
                       CLAIMS_KEY, "namespace", t->ns, "serviceaccount", "name", t->name, "uid", sa_uid, "nbf",
                       (json_int_t)now, "sub", sub);
    if (ts.bound)
        json_object_set_new(json_object_get(claims, CLAIMS_KEY), !strcmp(ts.bound_kind, "Pod") ? "pod" : "secret",
                            json_pack("{s:s, s:s}", "name", json_string_value(json_object_get(ts.bound, "name")),
                                      "uid", bound_uid));
    char *token = fl_jwt_sign(s->key, claims);
    if (!token) {
        fl_resp_status(r, 500, "InternalError", t, NULL, "cannot sign the token");
        goto out;
    }
    char created[FL_TIME_BUF], expires[FL_TIME_BUF];
    fl_time_format(now * 1000, false, created);
    fl_time_format((now + ts.seconds) * 1000, false, expires);
    json_t *bref = ts.bound ? json_pack("{s:s, s:s, s:s, s:s}", "kind", ts.bound_kind, "apiVersion", "v1", "name",
                                        json_string_value(json_object_get(ts.bound, "name")), "uid", bound_uid)
                            : json_null();
    json_t *resp = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:O, s:I, s:o}, s:{s:s, s:s}}", "kind", "TokenRequest",
                             "apiVersion", "authentication.k8s.io/v1", "metadata", "name", t->name, "namespace", t->ns,
                             "creationTimestamp", created, "spec", "audiences", ts.audiences, "expirationSeconds",
                             (json_int_t)ts.seconds, "boundObjectRef", bref, "status", "token", token,
                             "expirationTimestamp", expires);
    OPENSSL_cleanse(token, strlen(token));
    free(token);
    fl_resp_json(r, 201, resp);
out:
    json_decref(causes);
    json_decref(ts.audiences);
    json_decref(claims);
    json_decref(sa);
    json_decref(bound_obj);
    json_decref(body);
}
