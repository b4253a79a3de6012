/* webhook.h - the webhook interpreter backend: Karmada ResourceInterpreterWebhookConfigurations
 * answered by the user's own HTTPS services.
 *
 * A ResourceInterpreterWebhookConfiguration (config.karmada.io/v1alpha1, cluster-scoped)
 * lists webhooks. Each has a name, clientConfig (url, or service {namespace, name, path,
 * port}; caBundle, base64 of PEM certificates), rules ({operations, apiGroups,
 * apiVersions, kinds}, "*" matching anything), timeoutSeconds (1..30, default 10) and
 * interpreterContextVersions (must include "v1alpha1"). For an operation on an object the
 * backend takes every webhook with a rule matching (group, version, kind, operation), and
 * the first of them by "<configuration name>/<webhook name>" (strcmp order, as Karmada
 * sorts its hook UIDs) answers; the others are not called.
 *
 * One call is one POST of a ResourceInterpreterContext to the webhook's url:
 *   {"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterContext",
 *    "request": {"uid", "kind": {"group", "version", "kind"}, "name", "namespace",
 *                "operation", "object", "observedObject" (Retain), "replicas" (the desired
 *                count for ReviseReplica; 0 otherwise, always present as in Karmada),
 *                "aggregatedStatus" (AggregateStatus, when there are items)}}
 * and the answer's "response" {uid (must equal the request's), successful, status
 * {message, code} (required when successful is false), and per operation:
 *   InterpretReplica     replicas (required), replicaRequirements (optional)
 *   ReviseReplica, Retain, AggregateStatus
 *                        patch (base64 of an RFC 6902 JSON patch) with patchType
 *                        "JSONPatch", applied to the object sent; neither: unchanged
 *   InterpretStatus      rawStatus (required, an object)
 *   InterpretHealth      healthy (required)
 *   InterpretDependency  dependencies ([{apiVersion, kind, namespace, name | labelSelector}])
 * All as Karmada's request/response types spell them (pkg/apis/config/v1alpha1).
 *
 * Transport: HTTPS only, the server certificate verified against caBundle (the system
 * trust store when caBundle is empty) and the url's host; no client certificate; the
 * webhook's timeoutSeconds bounds the whole call (connect included). Each webhook endpoint
 * (url origin + caBundle) keeps a pool of curl handles whose connections stay open, so
 * steady-state calls do not redo TCP and TLS handshakes; TLS sessions are shared across
 * handles. clientConfig.service cannot be reached from here (Karmada resolves it through
 * the cluster's Services and in-cluster DNS, which the control plane does not have): such
 * a webhook still claims its rules, so its calls fail with FL_EINVAL naming
 * clientConfig.service, instead of silently falling through to another backend.
 *
 * Errors of operations follow interp.h (the registry adds backend and object); the
 * backend's own text is one line naming webhook, configuration, operation, the POST and
 * what went wrong:
 *   webhook "clone.example.com" of ResourceInterpreterWebhookConfiguration "hooks": InterpretHealth:
 *     POST https://127.0.0.1:9443/interpret: timed out after 2 s
 *   FL_ETIMEDOUT  the timeout ran out (connecting or waiting for the answer)
 *   FL_EIO        cannot connect, TLS failure (certificate not trusted, handshake), the
 *                 connection broke, HTTP status other than 2xx ("HTTP 500: <body start>")
 *   FL_ETOOBIG    the answer is larger than the options' max_response
 *   FL_EINVAL     the answer is not a ResourceInterpreterContext, its uid differs,
 *                 successful is false ("webhook said: <status.message> (code N)"), a
 *                 required field is missing or mistyped, the patch cannot be decoded or
 *                 applied; or the webhook uses clientConfig.service
 *
 * Threads: every function here may be called from any thread; operations run on many
 * threads at once (the registry's read lock), set/delete/attach/detach serialise among
 * themselves. */
#ifndef FL_INTERP_WEBHOOK_H
#define FL_INTERP_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "interp/interp.h"

/* Tuning of a backend. Zero in a field means its default. */
typedef struct fl_webhook_options {
    unsigned max_idle;     /* idle connections kept per endpoint; default 8 */
    size_t max_response;   /* largest answer body accepted, bytes; default 16 MiB */
    const char *user_agent; /* default "flotilla-interpreter"; copied */
} fl_webhook_options;

#define FL_WEBHOOK_DEFAULT_TIMEOUT_S 10
#define FL_WEBHOOK_DEFAULT_MAX_IDLE 8u
#define FL_WEBHOOK_DEFAULT_MAX_RESPONSE ((size_t)16 << 20)

typedef struct fl_webhook_backend fl_webhook_backend;

/* A backend with no configurations (opts NULL: defaults). Never NULL. */
fl_webhook_backend *fl_webhook_backend_new(const fl_webhook_options *opts);

/* Free the backend, its configurations and its connections (NULL: no-op). It must have
 * been detached first (fl_webhook_backend_detach, or the registry freed) and no call may
 * run. */
void fl_webhook_backend_free(fl_webhook_backend *b);

/* Register b in ip (fl_interp_add_backend: ahead of every backend already there, so
 * attach it after the bundled customizations and before the users' Lua customizations to
 * get Karmada's order). From then on set/delete swap b's configurations under
 * fl_interp_edit(ip). At most one registry at a time; a second attach is a no-op. */
void fl_webhook_backend_attach(fl_webhook_backend *b, fl_interp *ip);

/* Remove b from the registry it is attached to (no-op if none). Waits for running calls. */
void fl_webhook_backend_detach(fl_webhook_backend *b);

/* Add the configuration config (a ResourceInterpreterWebhookConfiguration JSON object), or
 * replace the one with the same metadata.name. The configuration is checked as Karmada's
 * admission does (fl_webhook_config_check) before anything changes; then the set is
 * swapped, and connections of endpoints that did not change are kept. Returns 0, or
 * FL_EINVAL with *err (malloc'd, caller frees; NULL on success; err may be NULL) naming
 * the configuration and the field, e.g.
 *   ResourceInterpreterWebhookConfiguration "hooks": webhooks[0].clientConfig.url:
 *     'https' is the only allowed URL scheme; desired format: https://host[:port][/path]
 * On failure the old version, if any, stays. config is only read. */
int fl_webhook_backend_set(fl_webhook_backend *b, const json_t *config, char **err);

/* Remove the configuration named name. Returns 0 or FL_ENOTFOUND. */
int fl_webhook_backend_delete(fl_webhook_backend *b, const char *name);

/* How many configurations b holds. */
size_t fl_webhook_backend_count(fl_webhook_backend *b);

/* Check config as fl_webhook_backend_set would, without keeping anything: metadata.name;
 * webhooks[] each with a non-empty name unique in the configuration; clientConfig with
 * exactly one of url (https, a host, no user information, query or fragment) and service
 * (namespace and name required, port 1..65535); caBundle base64 of at least one PEM
 * certificate; rules[] with non-empty operations (known names or "*" alone), apiGroups,
 * apiVersions and kinds ("*" alone; versions and kinds non-empty); timeoutSeconds 1..30;
 * interpreterContextVersions including "v1alpha1", without duplicates. Returns 0, or
 * FL_EINVAL with *err (malloc'd; err may be NULL) as for set. For API validation too. */
int fl_webhook_config_check(const json_t *config, char **err);

/* The operations (self is the fl_webhook_backend; the registry is the only caller, under
 * its read lock). has() rejects in O(1) when no rule names the operation and the kind
 * (nor "*"), else scans the rules of the matching webhooks in order. */
extern const fl_interp_backend fl_webhook_backend_vtable;

#endif
