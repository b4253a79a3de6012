/* auth.h - who is calling, and what they may do: the server's token table, its authorizer,
 * and the pull-mode registration endpoint.
 *
 * Four kinds of identity hold bearer tokens (docs/internals/auth.md); what each may do is
 * decided by RBAC (rbac.h) from the default roles and bindings:
 *   "admin"                          DIR/pki/admin.token: allowed everything;
 *   "system:bootstrap"               DIR/pki/bootstrap.token: may register a pull cluster, read
 *                                    discovery and /version, nothing else;
 *   "system:flotilla:agent:<name>"   issued by registration, one per pull cluster: its own Cluster,
 *                                    its own Lease, its own execution namespace karmada-es-<name>;
 *   "system:flotilla:metrics-reader" DIR/pki/metrics-reader.token: GET /metrics, discovery,
 *                                    /version and health, nothing else (for Prometheus).
 * Tokens are kept as SHA-256 digests only, in memory and in the store (Secret
 * karmada-cluster/<name>-agent-token, data.tokenSHA256). An agent token is checked against that
 * Secret and its Cluster on every request (both reads come from the store's memory), so deleting
 * either, or re-registering, revokes it at once and on every path (unjoin, namespace deletion,
 * garbage collection).
 *
 * Beside the table, fl_auth_set_authenticators plugs in client certificates (authn_x509.h) and
 * ServiceAccount tokens (sa_token.h), tried as kube-apiserver's union: a certificate first,
 * then a bearer token (the table, then a JWT).
 *
 * http.c authenticates (fl_auth_authenticate) and puts the identity in fl_req.who; api.c calls
 * the authorizer once the path is parsed (fl_auth_authorize, fl_auth_authorize_path) and routes
 * POST /apis/flotilla.io/v1alpha1/register to fl_auth_register. A request whose who is NULL
 * comes from inside the process (or from a server started with --insecure-http) and is trusted.
 *
 * Threads: every function may be called from any thread, concurrently, except fl_auth_free. */
#ifndef FL_AUTH_H
#define FL_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

struct fl_target;
typedef struct fl_auth fl_auth;
struct fl_rbac;

#define FL_AUTH_ADMIN "admin"
#define FL_AUTH_BOOTSTRAP "system:bootstrap"
#define FL_AUTH_ANONYMOUS "system:anonymous"
#define FL_AUTH_AGENT_PREFIX "system:flotilla:agent:"
#define FL_AUTH_METRICS_READER "system:flotilla:metrics-reader"

/* Where the agent tokens live, and the registration endpoint. */
#define FL_AUTH_SECRET_NAMESPACE "karmada-cluster"
#define FL_AUTH_SECRET_SUFFIX "-agent-token"
#define FL_AUTH_SECRET_LABEL "flotilla.io/agent-token"
#define FL_AUTH_SECRET_UID_ANNOTATION "flotilla.io/cluster-uid"
#define FL_AUTH_SECRET_KEY "tokenSHA256"
#define FL_AUTH_REGISTER_PATH "/apis/flotilla.io/v1alpha1/register"
#define FL_AUTH_CLUSTER_NAME_MAX 48

/* The groups every identity is in (Kubernetes' names). The admin identity is in system:masters,
 * which authorization allows everything, as kube-apiserver does. */
#define FL_AUTH_GROUP_AUTHENTICATED "system:authenticated"
#define FL_AUTH_GROUP_UNAUTHENTICATED "system:unauthenticated"
#define FL_AUTH_GROUP_MASTERS "system:masters"
#define FL_AUTH_GROUP_BOOTSTRAPPERS "system:bootstrappers"
#define FL_AUTH_GROUP_AGENTS "system:flotilla:agents"

/* Bounds of an identity, NUL included: names and groups longer, or more groups, are refused
 * where they come in (a token file line, a certificate, a review's body). */
#define FL_AUTH_USER_MAX 256
#define FL_AUTH_UID_MAX 64
#define FL_AUTH_GROUP_MAX 128
#define FL_AUTH_GROUPS_MAX 16

/* Who is calling, as Kubernetes' user.Info: a name, a uid ("" when none) and groups. Plain
 * data, copied by value; a transport keeps one per request. */
typedef struct fl_identity {
    char user[FL_AUTH_USER_MAX];
    char uid[FL_AUTH_UID_MAX];
    size_t ngroups;
    char groups[FL_AUTH_GROUPS_MAX][FL_AUTH_GROUP_MAX];
} fl_identity;

/* Set id to user (and uid, may be NULL) with no groups. FL_EINVAL when either is empty or does
 * not fit (id is then all empty). */
int fl_identity_set(fl_identity *id, const char *user, const char *uid);
/* Add group to id unless it is there. FL_EINVAL when it is empty, too long, or id is full. */
int fl_identity_add_group(fl_identity *id, const char *group);
/* Is id in group? */
bool fl_identity_in_group(const fl_identity *id, const char *group);
/* The anonymous identity: system:anonymous in system:unauthenticated. */
void fl_identity_anonymous(fl_identity *id);

/* A table for api (not owned; it must outlive the table) with the admin and bootstrap
 * tokens (copied; either may be NULL to have no such identity). Agent tokens are not
 * loaded yet: call fl_auth_load. *out is always set. Returns 0. */
int fl_auth_new(fl_api *api, const char *admin_token, const char *bootstrap_token, fl_auth **out);
/* NULL-safe. No request may be running. */
void fl_auth_free(fl_auth *a);
/* Let token (copied as a digest; NULL or "" adds nothing) authenticate as the metrics reader:
 * GET /metrics plus what every identity may read, nothing else (what Prometheus needs). */
void fl_auth_set_metrics_reader(fl_auth *a, const char *token);

/* (Re)load the agent tokens from the Secrets labelled flotilla.io/agent-token in
 * karmada-cluster (at start-up: a restart keeps agents working), and create the default RBAC
 * objects and each loaded agent's roles where missing (rbac.h). Returns how many tokens were
 * loaded (>= 0); Secrets that do not parse are skipped with a warning. */
int fl_auth_load(fl_auth *a);

/* Load kube-apiserver's --token-auth-file: CSV lines `token,user,uid[,"group1,group2,..."]`
 * (blank lines and lines starting with # skipped). Each token authenticates as that user with
 * those groups plus system:authenticated. Returns how many tokens were loaded, or FL_EINVAL
 * with *err (malloc'd) naming the file and line that does not parse (nothing is loaded then). */
int fl_auth_load_token_file(fl_auth *a, const char *path, char **err);

/* Who holds token? On success fills *who and returns 0; FL_ENOTFOUND (and *who all empty)
 * for an unknown, rotated or revoked token. A token not in the table that has a JWT's shape is
 * tried as a ServiceAccount token (sa_token.h) when fl_auth_set_authenticators gave one. Every identity found is in system:authenticated;
 * admin also in system:masters, bootstrap in system:bootstrappers, agents in
 * system:flotilla:agents. An agent token found in the table is confirmed against its Secret
 * and Cluster in the store; one that no longer matches is dropped from the table. */
int fl_auth_authenticate(fl_auth *a, const char *token, fl_identity *who);

/* The other authenticators, as kube-apiserver's union: client certificates (authn_x509.h) and
 * ServiceAccount tokens (sa_token.h). Either may be NULL (none); not owned, they must outlive
 * a. Call before serving. */
struct fl_x509_authn;
struct fl_sa_tokens;
struct fl_x509_der;
void fl_auth_set_authenticators(fl_auth *a, struct fl_x509_authn *x509, struct fl_sa_tokens *sa);
/* What fl_auth_set_authenticators set (NULL when none, or a NULL). */
struct fl_sa_tokens *fl_auth_sa_tokens(const fl_auth *a);
struct fl_x509_authn *fl_auth_x509(const fl_auth *a);
bool fl_auth_has_x509(const fl_auth *a);
/* Who does the client certificate chain certs (leaf first, DER as TLS delivered it) name?
 * 0 with *who set, or FL_ENOTFOUND (*who all empty) when no certificate verifier is set or the
 * chain does not verify for client authentication against the trusted CAs. */
int fl_auth_authenticate_cert(fl_auth *a, const struct fl_x509_der *certs, size_t n, fl_identity *who);

/* Agent tokens in the table (for tests and metrics). */
size_t fl_auth_agent_count(fl_auth *a);

/* The attributes authorization decides on, as Kubernetes' authorizer.Attributes. Strings are
 * "" when absent, never NULL (except path, NULL for resource requests). */
typedef struct fl_auth_attrs {
    const fl_identity *who;  /* NULL: a trusted in-process caller */
    const char *verb;        /* get list watch create update patch delete deletecollection; for
                              * non-resource requests the lower-case HTTP method */
    const char *path;        /* non-resource requests: the URL path; NULL otherwise */
    const char *group;
    const char *resource;
    const char *subresource;
    const char *ns;
    const char *name;        /* for list/watch: the name a fieldSelector metadata.name=X pins */
} fl_auth_attrs;

/* The decision: true = allowed. at->who NULL (trusted) and system:masters are allowed
 * everything; anyone else what the RBAC objects in a's store grant (rbac.h). a NULL: only
 * those two. */
bool fl_auth_allowed(fl_auth *a, const fl_auth_attrs *at);
/* a's RBAC authorizer (rbac.h), NULL for a NULL. */
struct fl_rbac *fl_auth_rbac(fl_auth *a);

/* Authorize a resource request addressed to t with Kubernetes verb `verb`. r->who NULL is
 * always allowed. On denial answers r with 403 Forbidden (Kubernetes' wording) and returns
 * false. The name for list/watch comes from a metadata.name field selector, the name for
 * create from the JSON body. */
bool fl_auth_authorize(fl_auth *a, fl_req *r, const char *verb, const struct fl_target *t);
/* The same for a non-resource request (discovery, /version, /metrics, unknown paths). */
bool fl_auth_authorize_path(fl_auth *a, fl_req *r);

/* Is path the registration endpoint? */
bool fl_auth_is_register_path(const char *path);
/* Serve POST /apis/flotilla.io/v1alpha1/register {"clusterName": NAME} for api->auth:
 * allowed to the admin and bootstrap identities (and r->who NULL). Creates Cluster NAME
 * (syncMode Pull) unless it exists, the namespaces karmada-cluster and karmada-es-NAME,
 * and a fresh agent token whose digest replaces the cluster's previous one; answers 201
 * {"clusterName", "token"}. A Push cluster of that name, or one being deleted: 409. */
void fl_auth_register(fl_api *api, fl_req *r);

#endif
