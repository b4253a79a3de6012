/* rbac_defaults.c - the roles and bindings a server starts with, and what registration gives an
 * agent (see rbac.h; the list is explained in docs/access.md, "Roles and bindings").
 *
 * The defaults are the ones kube-apiserver bootstraps (cluster-admin bound to system:masters;
 * admin, edit and view aggregated from the rbac.authorization.k8s.io/aggregate-to-* labels;
 * system:discovery, system:basic-user, system:public-info-viewer) with Karmada's namespaced
 * policy kinds added to edit and view, plus Flotilla's own: the metrics reader, the bootstrap
 * identity's registration right, and the ClusterRole an agent holds in its execution namespace.
 * They are a table of data below; each becomes an object labelled
 * kubernetes.io/bootstrapping: rbac-defaults, created through the API in process when missing
 * and never replaced, so a user's change stays (delete an object to have it back at the next
 * start). */
#include "api/rbac.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/wellknown.h"

#define LOG "rbac"

/* One PolicyRule: comma-separated lists (NULL = absent). */
typedef struct drule {
    const char *groups, *resources, *verbs, *urls;
} drule;

typedef struct drole {
    const char *name;
    const char *label;     /* an aggregate-to-* label this role carries, or NULL */
    const char *aggregate; /* the label whose roles this one aggregates, or NULL */
    const drule *rules;    /* ended by a zero rule */
} drole;

typedef struct dbinding {
    const char *name;      /* also its ClusterRole's */
    const char *subjects;  /* "Group:x,User:y" */
} dbinding;

#define AGG "rbac.authorization.k8s.io/aggregate-to-"
#define R "get,list,watch"
#define W "create,delete,deletecollection,patch,update"
#define RW "create,delete,deletecollection,get,list,patch,update,watch"

static const drule cluster_admin[] = {{"*", "*", "*", NULL}, {NULL, NULL, "*", "*"}, {0}};

static const drule to_view[] = {
    {"", "pods,pods/log,pods/status,configmaps,endpoints,persistentvolumeclaims,persistentvolumeclaims/status,"
         "replicationcontrollers,replicationcontrollers/scale,replicationcontrollers/status,serviceaccounts,services,"
         "services/status,bindings,events,limitranges,resourcequotas,resourcequotas/status,namespaces,namespaces/status",
     R, NULL},
    {"discovery.k8s.io", "endpointslices", R, NULL},
    {"apps", "controllerrevisions,daemonsets,daemonsets/status,deployments,deployments/scale,deployments/status,"
             "replicasets,replicasets/scale,replicasets/status,statefulsets,statefulsets/scale,statefulsets/status",
     R, NULL},
    {"autoscaling", "horizontalpodautoscalers,horizontalpodautoscalers/status", R, NULL},
    {"batch", "cronjobs,cronjobs/status,jobs,jobs/status", R, NULL},
    {"policy", "poddisruptionbudgets,poddisruptionbudgets/status", R, NULL},
    {"networking.k8s.io", "ingresses,ingresses/status,networkpolicies", R, NULL},
    {"events.k8s.io", "events", R, NULL},
    /* Karmada: the namespaced policies and what the control plane made of them */
    {"policy.karmada.io", "propagationpolicies,propagationpolicies/status,overridepolicies", R, NULL},
    {"work.karmada.io", "resourcebindings,resourcebindings/status", R, NULL},
    {"kpt.dev", "resourcegroups,resourcegroups/status", R, NULL},
    {0}};

static const drule to_edit[] = {
    {"", "pods/attach,pods/exec,pods/portforward,pods/proxy,secrets,services/proxy", R, NULL},
    {"", "serviceaccounts", "impersonate", NULL},
    {"", "pods,pods/attach,pods/exec,pods/portforward,pods/proxy", W, NULL},
    {"", "pods/eviction,serviceaccounts/token", "create", NULL},
    {"", "configmaps,events,persistentvolumeclaims,replicationcontrollers,replicationcontrollers/scale,secrets,"
         "serviceaccounts,services,services/proxy",
     W, NULL},
    {"apps", "daemonsets,deployments,deployments/rollback,deployments/scale,replicasets,replicasets/scale,statefulsets,"
             "statefulsets/scale",
     W, NULL},
    {"autoscaling", "horizontalpodautoscalers", W, NULL},
    {"batch", "cronjobs,jobs", W, NULL},
    {"policy", "poddisruptionbudgets", W, NULL},
    {"networking.k8s.io", "ingresses,networkpolicies", W, NULL},
    /* Karmada: users write their policies; ResourceBindings are the scheduler's, read only */
    {"policy.karmada.io", "propagationpolicies,overridepolicies", W, NULL},
    {"kpt.dev", "resourcegroups", W, NULL},
    {0}};

static const drule to_admin[] = {
    {"rbac.authorization.k8s.io", "roles,rolebindings", RW, NULL},
    {"authorization.k8s.io", "localsubjectaccessreviews", "create", NULL},
    {0}};

static const drule discovery[] = {
    {NULL, NULL, "get", "/api,/api/*,/apis,/apis/*,/healthz,/livez,/openapi,/openapi/*,/readyz,/version,/version/"},
    {0}};

/* Flotilla also lets everyone see the named health checks (/healthz/ping ...), as its public
 * paths do without a token. */
static const drule public_info[] = {
    {NULL, NULL, "get", "/healthz,/healthz/*,/livez,/livez/*,/readyz,/readyz/*,/version,/version/"}, {0}};

static const drule basic_user[] = {
    {"authorization.k8s.io", "selfsubjectaccessreviews,selfsubjectrulesreviews", "create", NULL},
    {"authentication.k8s.io", "selfsubjectreviews", "create", NULL},
    {0}};

static const drule metrics_reader[] = {{NULL, NULL, "get", "/metrics"}, {0}};
static const drule bootstrapper[] = {{"flotilla.io", "register", "create", NULL}, {0}};

/* What an agent holds in its execution namespace karmada-es-<name>, through a RoleBinding
 * there (so "namespaces" is that Namespace only). No delete, no Work create, no Secrets. */
static const drule agent[] = {
    {"", "namespaces", "get", NULL},
    {"work.karmada.io", "works", "get,list,watch,update,patch", NULL},
    {"work.karmada.io", "works/status", "get,update,patch", NULL},
    {",events.k8s.io", "events", "get,list,watch,create,update,patch", NULL},
    {0}};

static const drole default_roles[] = {
    {"cluster-admin", NULL, NULL, cluster_admin},
    {"admin", NULL, AGG "admin", NULL},
    {"edit", AGG "admin", AGG "edit", NULL},
    {"view", AGG "edit", AGG "view", NULL},
    {"system:aggregate-to-admin", AGG "admin", NULL, to_admin},
    {"system:aggregate-to-edit", AGG "edit", NULL, to_edit},
    {"system:aggregate-to-view", AGG "view", NULL, to_view},
    {"system:discovery", NULL, NULL, discovery},
    {"system:public-info-viewer", NULL, NULL, public_info},
    {"system:basic-user", NULL, NULL, basic_user},
    {"system:flotilla:metrics-reader", NULL, NULL, metrics_reader},
    {"system:flotilla:bootstrapper", NULL, NULL, bootstrapper},
    {FL_RBAC_AGENT_ROLE, NULL, NULL, agent},
};

static const dbinding default_bindings[] = {
    {"cluster-admin", "Group:" FL_AUTH_GROUP_MASTERS},
    {"system:discovery", "Group:" FL_AUTH_GROUP_AUTHENTICATED},
    {"system:basic-user", "Group:" FL_AUTH_GROUP_AUTHENTICATED},
    {"system:public-info-viewer", "Group:" FL_AUTH_GROUP_AUTHENTICATED ",Group:" FL_AUTH_GROUP_UNAUTHENTICATED},
    {"system:flotilla:metrics-reader", "User:" FL_AUTH_METRICS_READER},
    {"system:flotilla:bootstrapper", "Group:" FL_AUTH_GROUP_BOOTSTRAPPERS},
};

/* A JSON array of the comma-separated items of list ("" items kept: the core group). */
static json_t *split(const char *list)
{
    json_t *a = json_array();
    for (const char *p = list; p;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        json_array_append_new(a, json_stringn(p, n));
        p = c ? c + 1 : NULL;
    }
    return a;
}

static json_t *rule_json(const drule *d)
{
    json_t *r = json_pack("{s:o}", "verbs", split(d->verbs));
    if (d->groups)
        json_object_set_new(r, "apiGroups", split(d->groups));
    if (d->resources)
        json_object_set_new(r, "resources", split(d->resources));
    if (d->urls)
        json_object_set_new(r, "nonResourceURLs", split(d->urls));
    return r;
}

static json_t *meta(const char *name, const char *ns)
{
    json_t *m = json_pack("{s:s, s:{s:s}, s:{s:s}}", "name", name, "labels", FL_RBAC_BOOTSTRAP_LABEL,
                          FL_RBAC_BOOTSTRAP_VALUE, "annotations", "rbac.authorization.kubernetes.io/autoupdate", "true");
    if (ns)
        json_object_set_new(m, "namespace", json_string(ns));
    return m;
}

static json_t *role_json(const char *kind, json_t *metadata, json_t *rules)
{
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", FL_RBAC_GROUP "/v1", "kind", kind, "metadata", metadata,
                     "rules", rules);
}

static json_t *binding_json(const char *kind, json_t *metadata, const char *role_kind, const char *role,
                            json_t *subjects)
{
    return json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s}, s:o}", "apiVersion", FL_RBAC_GROUP "/v1", "kind", kind,
                     "metadata", metadata, "roleRef", "apiGroup", FL_RBAC_GROUP, "kind", role_kind, "name", role,
                     "subjects", subjects);
}

static json_t *subject(const char *kind, const char *name)
{
    return json_pack("{s:s, s:s, s:s}", "kind", kind, "apiGroup", FL_RBAC_GROUP, "name", name);
}

/* Create obj (stolen) at the collection path unless it exists: 1 created, 0 there, FL_EIO. */
static int create(fl_api *api, const char *coll, json_t *obj)
{
    char *body = fl_json_dumps(obj, NULL);
    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = "POST";
    r.path = coll;
    r.content_type = "application/json";
    r.user_agent = "flotilla-rbac-bootstrap";
    r.body = body;
    r.body_len = strlen(body);
    r.discard = true;
    fl_api_handle(api, &r);
    int rc = r.code == 201 ? 1 : r.code == 409 ? 0 : FL_EIO;
    if (rc < 0)
        fl_log(FL_LOG_WARN, LOG, "cannot create %s %s: %d %s", fl_obj_str(obj, "kind", NULL),
               fl_obj_str(obj, "metadata", "name"), r.code, r.resp ? r.resp : "");
    free(r.resp);
    free(r.warnings);
    free(body);
    json_decref(obj);
    return rc;
}

#define CR_PATH "/apis/" FL_RBAC_GROUP "/v1/clusterroles"
#define CRB_PATH "/apis/" FL_RBAC_GROUP "/v1/clusterrolebindings"

int fl_rbac_ensure_defaults(fl_api *api)
{
    int created = 0, failed = 0;
    for (size_t i = 0; i < sizeof default_roles / sizeof *default_roles; i++) {
        const drole *d = &default_roles[i];
        json_t *rules = json_array();
        for (const drule *r = d->rules; r && r->verbs; r++)
            json_array_append_new(rules, rule_json(r));
        json_t *m = meta(d->name, NULL);
        if (d->label)
            json_object_set_new(json_object_get(m, "labels"), d->label, json_string("true"));
        json_t *obj = role_json("ClusterRole", m, rules);
        if (d->aggregate)
            json_object_set_new(obj, "aggregationRule",
                                json_pack("{s:[{s:{s:s}}]}", "clusterRoleSelectors", "matchLabels", d->aggregate, "true"));
        int rc = create(api, CR_PATH, obj);
        created += rc > 0;
        failed += rc < 0;
    }
    for (size_t i = 0; i < sizeof default_bindings / sizeof *default_bindings; i++) {
        const dbinding *d = &default_bindings[i];
        json_t *subjects = json_array(), *items = split(d->subjects);
        size_t j;
        json_t *it;
        json_array_foreach(items, j, it) {
            const char *s = json_string_value(it), *colon = strchr(s, ':');
            char kind[16];
            snprintf(kind, sizeof kind, "%.*s", (int)(colon - s), s);
            json_array_append_new(subjects, subject(kind, colon + 1));
        }
        json_decref(items);
        int rc = create(api, CRB_PATH, binding_json("ClusterRoleBinding", meta(d->name, NULL), "ClusterRole", d->name,
                                                    subjects));
        created += rc > 0;
        failed += rc < 0;
    }
    if (created)
        fl_log(FL_LOG_INFO, LOG, "created %d default RBAC object(s)", created);
    return failed ? FL_EIO : created;
}

/* ---------------------------------------------------------------- agents */

/* metadata for an agent's object, owned by its Cluster. */
static json_t *agent_meta(const char *name, const char *ns, const char *cluster, const char *uid)
{
    json_t *m = json_pack("{s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s}]}", "name", name, "labels",
                          FL_AUTH_SECRET_LABEL, cluster, "ownerReferences", "apiVersion",
                          "cluster.karmada.io/v1alpha1", "kind", "Cluster", "name", cluster, "uid", uid);
    if (ns)
        json_object_set_new(m, "namespace", json_string(ns));
    return m;
}

static json_t *names_rule(const char *group, const char *resource, const char *verbs, const char *name)
{
    return json_pack("{s:[s], s:[s], s:o, s:[s]}", "apiGroups", group, "resources", resource, "verbs", split(verbs),
                     "resourceNames", name);
}

int fl_rbac_ensure_agent(fl_api *api, const char *cluster, const char *cluster_uid)
{
    char user[FL_AUTH_USER_MAX], exec_ns[128];
    snprintf(user, sizeof user, "%s%s", FL_AUTH_AGENT_PREFIX, cluster);
    snprintf(exec_ns, sizeof exec_ns, "%s%s", FL_EXECUTION_SPACE_PREFIX, cluster);
    int bad = 0;
    /* its Cluster: read it, write its status */
    json_t *rules = json_pack("[o, o]", names_rule("cluster.karmada.io", "clusters", R, cluster),
                              names_rule("cluster.karmada.io", "clusters/status", "get,update,patch", cluster));
    bad |= create(api, CR_PATH, role_json("ClusterRole", agent_meta(user, NULL, cluster, cluster_uid), rules)) < 0;
    bad |= create(api, CRB_PATH,
                  binding_json("ClusterRoleBinding", agent_meta(user, NULL, cluster, cluster_uid), "ClusterRole", user,
                               json_pack("[o]", subject("User", user)))) < 0;
    /* its Lease in karmada-cluster */
    char *roles = fl_asprintf("/apis/%s/v1/namespaces/%s/roles", FL_RBAC_GROUP, FL_AUTH_SECRET_NAMESPACE);
    char *bindings = fl_asprintf("/apis/%s/v1/namespaces/%s/rolebindings", FL_RBAC_GROUP, FL_AUTH_SECRET_NAMESPACE);
    rules = json_pack("[o]", names_rule("coordination.k8s.io", "leases", "get,list,watch,create,update,patch", cluster));
    bad |= create(api, roles,
                  role_json("Role", agent_meta(user, FL_AUTH_SECRET_NAMESPACE, cluster, cluster_uid), rules)) < 0;
    bad |= create(api, bindings,
                  binding_json("RoleBinding", agent_meta(user, FL_AUTH_SECRET_NAMESPACE, cluster, cluster_uid), "Role",
                               user, json_pack("[o]", subject("User", user)))) < 0;
    free(bindings);
    /* its execution namespace */
    bindings = fl_asprintf("/apis/%s/v1/namespaces/%s/rolebindings", FL_RBAC_GROUP, exec_ns);
    bad |= create(api, bindings,
                  binding_json("RoleBinding", agent_meta(FL_RBAC_AGENT_ROLE, exec_ns, cluster, cluster_uid),
                               "ClusterRole", FL_RBAC_AGENT_ROLE, json_pack("[o]", subject("User", user)))) < 0;
    free(bindings);
    free(roles);
    return bad ? FL_EIO : 0;
}
