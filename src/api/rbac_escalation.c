/* rbac_escalation.c - Kubernetes' escalation check on writes of RBAC objects (rbac.h).
 *
 * Without it, anyone who may write Roles or RoleBindings could grant themselves (or anyone)
 * more than they hold. As kube-apiserver's RBAC registry does, a Role or ClusterRole may be
 * written only by someone who holds every permission it lists (in the Role's namespace; for a
 * ClusterRole cluster-wide) or who may `escalate` it, and a RoleBinding or ClusterRoleBinding
 * only by someone who holds every permission of the role it names or who may `bind` that role.
 * A ClusterRole with an aggregationRule takes whatever other roles hold, so it needs
 * `escalate` or every permission there is.
 *
 * "Holds" is decided by asking the authorizer (fl_auth_allowed) about each permission the
 * rules spell out: every combination of API group, resource, verb and resource name (a `*`
 * is asked as `*`, which only a `*` grant answers, as Kubernetes' coverage check does).
 * Bounded: rules that spell out more than CHECKS_MAX combinations need the verb. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/rbac.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "store/store.h"

#define CHECKS_MAX 20000
#define MISSING_SHOWN 8

typedef struct check {
    fl_auth *a;
    const fl_identity *who;
    const char *ns;      /* where the rules would apply; "" cluster-wide */
    size_t checks;
    size_t missing;
    fl_strbuf text;      /* the first MISSING_SHOWN permissions not held, Kubernetes' way */
} check;

static const char *str_at(const json_t *arr, size_t i, const char *dflt)
{
    const char *s = json_string_value(json_array_get(arr, i));
    return s ? s : dflt;
}

static void note_missing(check *c, const char *group, const char *res, const char *verb, const char *name,
                         const char *url)
{
    if (c->missing++ >= MISSING_SHOWN)
        return;
    if (url)
        fl_strbuf_printf(&c->text, "\n{NonResourceURLs:[\"%s\"], Verbs:[\"%s\"]}", url, verb);
    else if (name && *name)
        fl_strbuf_printf(&c->text, "\n{APIGroups:[\"%s\"], Resources:[\"%s\"], ResourceNames:[\"%s\"], Verbs:[\"%s\"]}",
                         group, res, name, verb);
    else
        fl_strbuf_printf(&c->text, "\n{APIGroups:[\"%s\"], Resources:[\"%s\"], Verbs:[\"%s\"]}", group, res, verb);
}

/* Ask about one permission. False once the bound is passed. */
static bool ask(check *c, fl_auth_attrs *at, const char *res_as_written, const char *url)
{
    if (++c->checks > CHECKS_MAX)
        return false;
    if (!fl_auth_allowed(c->a, at))
        note_missing(c, at->group, res_as_written, at->verb, at->name, url);
    return true;
}

/* Every permission rule spells out. False once the bound is passed. */
static bool check_rule(check *c, const json_t *rule)
{
    const json_t *verbs = json_object_get(rule, "verbs");
    const json_t *urls = json_object_get(rule, "nonResourceURLs");
    if (json_array_size(urls)) {
        for (size_t u = 0; u < json_array_size(urls); u++)
            for (size_t v = 0; v < json_array_size(verbs); v++) {
                fl_auth_attrs at = {.who = c->who, .verb = str_at(verbs, v, ""), .path = str_at(urls, u, ""),
                                    .group = "", .resource = "", .subresource = "", .ns = "", .name = ""};
                if (!ask(c, &at, "", at.path))
                    return false;
            }
        return true;
    }
    const json_t *groups = json_object_get(rule, "apiGroups"), *res = json_object_get(rule, "resources");
    const json_t *names = json_object_get(rule, "resourceNames");
    size_t nn = json_array_size(names) ? json_array_size(names) : 1;
    for (size_t g = 0; g < json_array_size(groups); g++)
        for (size_t r = 0; r < json_array_size(res); r++) {
            const char *written = str_at(res, r, "");
            char resource[128], sub[64] = "";
            const char *slash = strchr(written, '/');
            snprintf(resource, sizeof resource, "%.*s", slash ? (int)(slash - written) : (int)strlen(written),
                     written);
            if (slash)
                snprintf(sub, sizeof sub, "%s", slash + 1);
            for (size_t v = 0; v < json_array_size(verbs); v++)
                for (size_t n = 0; n < nn; n++) {
                    fl_auth_attrs at = {.who = c->who, .verb = str_at(verbs, v, ""), .path = NULL,
                                        .group = str_at(groups, g, ""), .resource = resource, .subresource = sub,
                                        .ns = c->ns, .name = str_at(names, n, "")};
                    if (!ask(c, &at, written, NULL))
                        return false;
                }
        }
    return true;
}

/* The rules of the role a binding names, read from the store (a new reference; an empty
 * array for a role that does not exist: such a binding grants nothing). */
static json_t *role_rules(fl_api *api, const json_t *ref, const char *ns)
{
    const char *kind = fl_json_str(ref, "kind"), *name = fl_json_str(ref, "name");
    bool cluster = kind && !strcmp(kind, "ClusterRole");
    const fl_kind *k = kind ? fl_kindreg_by_gvk(api->kinds, FL_RBAC_GROUP "/v1", kind) : NULL;
    json_t *rules = NULL;
    if (k && name) {
        char *key = fl_obj_key(k, cluster ? NULL : ns, name);
        fl_kv kv;
        if (fl_store_get(api->store, key, &kv) == 0) {
            json_t *obj = fl_api_decoded(kv.value);
            fl_blob_unref(kv.value);
            rules = json_incref(json_object_get(obj, "rules"));
            json_decref(obj);
        }
        free(key);
    }
    if (json_is_array(rules))
        return rules;
    json_decref(rules);
    return json_array();
}

/* May who `verb` (escalate, bind) the role named name of resource res (roles, clusterroles)? */
static bool may(fl_auth *a, const fl_identity *who, const char *verb, const char *res, const char *ns,
                const char *name)
{
    fl_auth_attrs at = {.who = who, .verb = verb, .path = NULL, .group = FL_RBAC_GROUP, .resource = res,
                        .subresource = "", .ns = ns, .name = name ? name : ""};
    return fl_auth_allowed(a, &at);
}

int fl_rbac_confirm_no_escalation(fl_api *api, fl_auth *a, const fl_identity *who, const char *kind, const char *ns,
                                  const json_t *obj, char **msg)
{
    *msg = NULL;
    bool role = !strcmp(kind, "Role"), crole = !strcmp(kind, "ClusterRole");
    bool binding = !strcmp(kind, "RoleBinding"), cbinding = !strcmp(kind, "ClusterRoleBinding");
    if (!who || !a || !(role || crole || binding || cbinding))
        return 0;
    const char *name = fl_json_meta(obj, "name");
    const char *where = role || binding ? ns : "";
    json_t *rules = NULL;
    if (role || crole) {
        if (may(a, who, "escalate", role ? "roles" : "clusterroles", where, name))
            return 0;
        if (crole && json_object_get(obj, "aggregationRule")) /* whatever other roles hold: everything */
            rules = json_pack("[{s:[s], s:[s], s:[s]}, {s:[s], s:[s]}]", "apiGroups", "*", "resources", "*", "verbs",
                              "*", "nonResourceURLs", "*", "verbs", "*");
        else
            rules = json_incref(json_object_get(obj, "rules"));
    } else {
        const json_t *ref = json_object_get(obj, "roleRef");
        const char *rkind = fl_json_str(ref, "kind");
        bool to_cluster_role = rkind && !strcmp(rkind, "ClusterRole");
        if (may(a, who, "bind", to_cluster_role ? "clusterroles" : "roles", to_cluster_role ? "" : where,
                fl_json_str(ref, "name")) ||
            (to_cluster_role && binding && may(a, who, "bind", "clusterroles", where, fl_json_str(ref, "name"))))
            return 0;
        rules = role_rules(api, ref, where);
    }
    check c = {.a = a, .who = who, .ns = where};
    bool bounded = true;
    size_t i;
    const json_t *rule;
    json_array_foreach(rules, i, rule)
        if (bounded && !check_rule(&c, rule))
            bounded = false;
    json_decref(rules);
    if (bounded && !c.missing) {
        free(c.text.p);
        return 0;
    }
    const char *resource = role ? "roles" : crole ? "clusterroles" : binding ? "rolebindings" : "clusterrolebindings";
    fl_strbuf groups = {0};
    for (size_t g = 0; g < who->ngroups; g++)
        fl_strbuf_printf(&groups, "%s\"%s\"", g ? " " : "", who->groups[g]);
    if (!bounded)
        *msg = fl_asprintf("%s.%s \"%s\" is forbidden: user \"%s\" (groups=[%s]) may not grant these rules: they "
                           "spell out more than %d permissions to check; it needs the %s verb",
                           resource, FL_RBAC_GROUP, name ? name : "", who->user, groups.p ? groups.p : "",
                           CHECKS_MAX, role || crole ? "escalate" : "bind");
    else
        *msg = fl_asprintf("%s.%s \"%s\" is forbidden: user \"%s\" (groups=[%s]) is attempting to grant RBAC "
                           "permissions not currently held:%s%s",
                           resource, FL_RBAC_GROUP, name ? name : "", who->user, groups.p ? groups.p : "",
                           c.text.p ? c.text.p : "", c.missing > MISSING_SHOWN ? "\n..." : "");
    free(groups.p);
    free(c.text.p);
    return 403;
}
