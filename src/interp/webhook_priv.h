/* webhook_priv.h - what the webhook backend's two files share, and nothing else includes.
 *
 *   webhook.c         the backend: configurations checked and parsed, the rulesets that
 *                     say which webhook answers, connection pools, the HTTPS POST, and the
 *                     interpreter vtable;
 *   webhook_review.c  the ResourceInterpreterContext: the request a call sends, and the
 *                     checks and readings of the response it gets back.
 * The contract of the whole is webhook.h. Everything here is pure or reads only what it is
 * given: any thread. */
#ifndef FL_INTERP_WEBHOOK_PRIV_H
#define FL_INTERP_WEBHOOK_PRIV_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/webhook.h"

#define KIND "ResourceInterpreterWebhookConfiguration"

/* Karmada's operation names, by fl_interp_op. */
static inline const char *op_name(enum fl_interp_op op)
{
    return fl_interp_op_name(op);
}

/* One rule: the operations it claims and the (group, version, kind) it matches; a NULL
 * list means "*". */
struct rule {
    unsigned ops;
    char **groups, **versions, **kinds;
    size_t ngroups, nversions, nkinds;
};

struct hook {
    char *name, *config, *uid; /* uid: "<config>/<name>", the sort key */
    char *url;                 /* NULL when the webhook names a service */
    char *service;             /* "namespace/name:port/path" of a service reference, else NULL */
    char *ca;                  /* PEM bytes of caBundle, NULL: system trust store */
    size_t ca_len;
    long timeout_s;
    struct rule *rules;
    size_t nrules;
    struct pool *pool;         /* NULL when parsed only for checking */
};

/* What an operation sends. */
struct args {
    enum fl_interp_op op;
    const json_t *obj;      /* object */
    const json_t *observed; /* Retain: observedObject (may be NULL) */
    const json_t *items;    /* AggregateStatus: aggregatedStatus (may be NULL) */
    int64_t replicas;       /* ReviseReplica */
};

/* ---- webhook_review.c ---- */

/* The failure of a call to h: rc, with *err (heap; when err is not NULL) the one-line
 * message naming the webhook, its configuration, the operation and the url. */
int fl_webhook_call_fail(const struct hook *h, enum fl_interp_op op, int rc, char **err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));



/* The ResourceInterpreterContext for a, with request.uid uid: heap text of *len bytes. */
char *fl_webhook_request_body(const struct args *a, const char *uid, size_t *len);

/* The response object of a 2xx answer (text, len) to the request uid, checked as Karmada's
 * VerifyResourceInterpreterContext: present, the same uid, successful or a status saying
 * why not. 0 with *out borrowed from *ctx (the whole answer; the caller decrefs it, also on
 * failure), or FL_EINVAL with *err (fl_webhook_call_fail). */
int fl_webhook_verify(const struct hook *h, enum fl_interp_op op, const char *uid, const char *text, size_t len,
                      json_t **ctx, json_t **out, char **err);

/* response.patch/patchType (r) applied to obj (ReviseReplica, Retain, AggregateStatus), as
 * Karmada's verifyResourceInterpreterContextWithPatch and applyPatch: 0 with *out a new
 * object (obj itself, copied, without a patch), or FL_EINVAL with *err. */
int fl_webhook_apply_response_patch(const struct hook *h, enum fl_interp_op op, const json_t *r, const json_t *obj,
                                    json_t **out, char **err);


/* Dependency reference d (element i of response.dependencies), as Karmada's
 * VerifyDependencies. 0, or FL_EINVAL with *why (heap). */
int fl_webhook_check_dependency(const json_t *d, size_t i, char **why);

#endif
