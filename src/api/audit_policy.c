/* audit_policy.c - the audit Policy: parsed from YAML (core/yaml.h) into plain arrays, checked
 * as kube-apiserver's validation checks it, and matched rule by rule (see audit_policy.h).
 *
 * Parsing goes YAML -> JSON -> the structs below, so that a malformed field is reported by
 * its path ("rules[1].resources[0].group") and the parsed policy holds no JSON: matching a
 * request walks short arrays of strings and allocates nothing, since it runs on every
 * request the server answers. */
#include "api/audit_policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/file.h"
#include "core/mem.h"
#include "core/yaml.h"

/* A policy file larger than this is refused: kube-apiserver's are a few kilobytes. */
#define POLICY_MAX_BYTES ((size_t)4 << 20)

typedef struct strlist {
    char **v;
    size_t n;
} strlist;

typedef struct group_resources {
    char *group;
    strlist resources;
    strlist names;
} group_resources;

typedef struct rule {
    fl_audit_level level;
    strlist users, groups, verbs, namespaces, urls;
    group_resources *res;
    size_t nres;
    unsigned omit_stages;
    int omit_managed; /* -1: not set (the policy's applies), else 0 or 1 */
} rule;

struct fl_audit_policy {
    rule *rules;
    size_t nrules;
    unsigned omit_stages;
    bool omit_managed;
};

static const char *const level_names[] = {"None", "Metadata", "Request", "RequestResponse"};
static const char *const stage_names[] = {"RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"};

const char *fl_audit_level_name(fl_audit_level l)
{
    return (unsigned)l < 4 ? level_names[l] : "None";
}

static void strlist_free(strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

void fl_audit_policy_free(fl_audit_policy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nrules; i++) {
        rule *r = &p->rules[i];
        strlist_free(&r->users);
        strlist_free(&r->groups);
        strlist_free(&r->verbs);
        strlist_free(&r->namespaces);
        strlist_free(&r->urls);
        for (size_t j = 0; j < r->nres; j++) {
            free(r->res[j].group);
            strlist_free(&r->res[j].resources);
            strlist_free(&r->res[j].names);
        }
        free(r->res);
    }
    free(p->rules);
    free(p);
}

size_t fl_audit_policy_rules(const fl_audit_policy *p)
{
    return p ? p->nrules : 0;
}

/* ---- parsing: each reader sets *err (the field's path and what is wrong) and returns
 * FL_EINVAL, or returns 0 ---- */

static int fail(char **err, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char **err, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_err_vset(err, field ? field : "Policy", fmt, ap);
    va_end(ap);
    return FL_EINVAL;
}

/* A list of strings at field (absent or null: empty). */
static int read_strlist(const json_t *v, const char *field, strlist *out, char **err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return fail(err, field, "expected a list of strings");
    size_t i;
    json_t *s;
    out->v = fl_calloc(json_array_size(v) + 1, sizeof *out->v);
    json_array_foreach(v, i, s)
    {
        if (!json_is_string(s)) {
            char f[160];
            snprintf(f, sizeof f, "%s[%zu]", field, i);
            return fail(err, f, "expected a string");
        }
        out->v[out->n++] = fl_strdup(json_string_value(s));
    }
    return 0;
}

static int read_level(const json_t *v, const char *field, fl_audit_level *out, char **err)
{
    const char *s = json_string_value(v);
    if (!v || (s && !s[0]))
        return fail(err, field, "Required value");
    for (int i = 0; s && i < 4; i++)
        if (!strcmp(s, level_names[i])) {
            *out = (fl_audit_level)i;
            return 0;
        }
    char shown[64];
    snprintf(shown, sizeof shown, "%s", s ? s : "(not a string)");
    return fail(err, field,
                "Unsupported value: \"%s\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"",
                shown);
}

static int read_stages(const json_t *v, const char *field, unsigned *out, char **err)
{
    strlist l = {0};
    int rc = read_strlist(v, field, &l, err);
    for (size_t i = 0; !rc && i < l.n; i++) {
        unsigned bit = 0;
        for (unsigned s = 0; s < 4; s++)
            if (!strcmp(l.v[i], stage_names[s]))
                bit = 1u << s;
        if (!bit) {
            char f[160];
            snprintf(f, sizeof f, "%s[%zu]", field, i);
            rc = fail(err, f, "Invalid value: \"%.64s\": allowed stages are RequestReceived,ResponseStarted,"
                              "ResponseComplete,Panic",
                      l.v[i]);
        }
        *out |= bit;
    }
    strlist_free(&l);
    return rc;
}

static int read_bool(const json_t *v, const char *field, int *out, char **err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return fail(err, field, "expected true or false");
    *out = json_is_true(v);
    return 0;
}

/* A DNS subdomain, as an API group must be: lower-case alphanumerics, '-' and '.', starting
 * and ending with an alphanumeric, at most 253 characters. */
static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && ((c != '-' && c != '.') || i == 0 || i == n - 1))
            return false;
    }
    return true;
}

static int read_resources(const json_t *v, const char *field, rule *r, char **err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return fail(err, field, "expected a list of {group, resources, resourceNames}");
    r->res = fl_calloc(json_array_size(v) + 1, sizeof *r->res);
    size_t i;
    json_t *gr;
    json_array_foreach(v, i, gr)
    {
        char f[160];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        if (!json_is_object(gr))
            return fail(err, f, "expected an object with group, resources and resourceNames");
        group_resources *g = &r->res[r->nres++];
        const json_t *group = json_object_get(gr, "group");
        if (group && !json_is_null(group) && !json_is_string(group)) {
            char gf[176];
            snprintf(gf, sizeof gf, "%s.group", f);
            return fail(err, gf, "expected a string");
        }
        g->group = fl_strdup(json_string_value(group) ? json_string_value(group) : "");
        if (g->group[0] && !dns_subdomain(g->group)) {
            char gf[176];
            snprintf(gf, sizeof gf, "%s.group", f);
            return fail(err, gf, "Invalid value: \"%.64s\": an API group is a lower-case DNS subdomain (\"apps\", "
                                 "not \"apps/v1\")",
                        g->group);
        }
        char rf[176], nf[176];
        snprintf(rf, sizeof rf, "%s.resources", f);
        snprintf(nf, sizeof nf, "%s.resourceNames", f);
        if (read_strlist(json_object_get(gr, "resources"), rf, &g->resources, err) ||
            read_strlist(json_object_get(gr, "resourceNames"), nf, &g->names, err))
            return FL_EINVAL;
        if (g->names.n && !g->resources.n)
            return fail(err, nf, "Invalid value: using resourceNames requires at least one resource");
    }
    return 0;
}

static int read_urls(const json_t *v, const char *field, strlist *out, char **err)
{
    if (read_strlist(v, field, out, err))
        return FL_EINVAL;
    for (size_t i = 0; i < out->n; i++) {
        const char *u = out->v[i];
        char f[160];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        if (!strcmp(u, "*"))
            continue;
        if (u[0] != '/')
            return fail(err, f, "Invalid value: \"%.64s\": non-resource URL rules must begin with a '/' character", u);
        const char *star = strchr(u, '*');
        if (star && star[1])
            return fail(err, f, "Invalid value: \"%.64s\": non-resource URL wildcards '*' must be the final "
                                "character of the rule",
                        u);
    }
    return 0;
}

static int read_rule(const json_t *v, size_t i, rule *r, char **err)
{
    char f[64], sub[96];
    snprintf(f, sizeof f, "rules[%zu]", i);
    r->omit_managed = -1;
    if (!json_is_object(v))
        return fail(err, f, "expected an object (a rule)");
#define FIELD(name) (snprintf(sub, sizeof sub, "%s.%s", f, name), sub)
    if (read_level(json_object_get(v, "level"), FIELD("level"), &r->level, err) ||
        read_strlist(json_object_get(v, "users"), FIELD("users"), &r->users, err) ||
        read_strlist(json_object_get(v, "userGroups"), FIELD("userGroups"), &r->groups, err) ||
        read_strlist(json_object_get(v, "verbs"), FIELD("verbs"), &r->verbs, err) ||
        read_strlist(json_object_get(v, "namespaces"), FIELD("namespaces"), &r->namespaces, err) ||
        read_urls(json_object_get(v, "nonResourceURLs"), FIELD("nonResourceURLs"), &r->urls, err) ||
        read_resources(json_object_get(v, "resources"), FIELD("resources"), r, err) ||
        read_stages(json_object_get(v, "omitStages"), FIELD("omitStages"), &r->omit_stages, err) ||
        read_bool(json_object_get(v, "omitManagedFields"), FIELD("omitManagedFields"), &r->omit_managed, err))
        return FL_EINVAL;
    if (r->urls.n && (r->nres || r->namespaces.n))
        return fail(err, FIELD("nonResourceURLs"),
                    "Invalid value: rules cannot apply to both regular resources and non-resource URLs");
#undef FIELD
    return 0;
}

static int read_policy(const json_t *doc, fl_audit_policy *p, char **err)
{
    if (!json_is_object(doc))
        return fail(err, NULL, "expected a Policy object");
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!av || (strcmp(av, "audit.k8s.io/v1") && strcmp(av, "audit.k8s.io/v1beta1") &&
                strcmp(av, "audit.k8s.io/v1alpha1")))
        return fail(err, "apiVersion", "expected audit.k8s.io/v1, not \"%.64s\"", av ? av : "");
    if (!kind || strcmp(kind, "Policy"))
        return fail(err, "kind", "expected Policy, not \"%.64s\"", kind ? kind : "");
    int managed = 0;
    if (read_stages(json_object_get(doc, "omitStages"), "omitStages", &p->omit_stages, err) ||
        read_bool(json_object_get(doc, "omitManagedFields"), "omitManagedFields", &managed, err))
        return FL_EINVAL;
    p->omit_managed = managed;
    const json_t *rules = json_object_get(doc, "rules");
    if (rules && !json_is_null(rules) && !json_is_array(rules))
        return fail(err, "rules", "expected a list of rules");
    if (!json_array_size(rules))
        return fail(err, "rules", "a policy needs at least one rule (kube-apiserver refuses one with none)");
    p->rules = fl_calloc(json_array_size(rules), sizeof *p->rules);
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r)
    {
        p->nrules++;
        if (read_rule(r, i, &p->rules[i], err))
            return FL_EINVAL;
        p->rules[i].omit_stages |= p->omit_stages; /* the policy's omitted stages apply to every rule */
    }
    return 0;
}

int fl_audit_policy_parse(const char *buf, size_t len, fl_audit_policy **out, char **err)
{
    *out = NULL;
    json_t *doc = NULL;
    /* aliases may not blow a small file up into a huge policy */
    int rc = fl_yaml_parse_limited(buf, len, POLICY_MAX_BYTES, &doc, err);
    if (rc)
        return FL_EINVAL;
    fl_audit_policy *p = fl_calloc(1, sizeof *p);
    rc = read_policy(doc, p, err);
    json_decref(doc);
    if (rc) {
        fl_audit_policy_free(p);
        return FL_EINVAL;
    }
    *out = p;
    return 0;
}

int fl_audit_policy_load(const char *path, fl_audit_policy **out, char **err)
{
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    if (fl_read_file(path, POLICY_MAX_BYTES, &buf, &len)) {
        *err = fl_asprintf("%s: cannot read the audit policy file: %m", path);
        return FL_EINVAL;
    }
    char *why = NULL;
    int rc = fl_audit_policy_parse(buf, len, out, &why);
    free(buf);
    if (rc) {
        char *line = fl_err_one_line(why ? why : "", why ? strlen(why) : 0, 400);
        *err = fl_asprintf("%s: %s", path, line);
        free(line);
        free(why);
    }
    return rc;
}

/* ---- matching (kube-apiserver's policy checker) ---- */

static bool has(const strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return true;
    return false;
}

/* A pattern with a trailing star ("/apis/" then a star) matches every path under its prefix; a star alone every path; anything else itself. */
static bool url_matches(const strlist *l, const char *path)
{
    for (size_t i = 0; i < l->n; i++) {
        const char *u = l->v[i];
        size_t n = strlen(u);
        if (!strcmp(u, "*") || !strcmp(u, path))
            return true;
        while (n && u[n - 1] == '*')
            n--;
        if (n < strlen(u) && !strncmp(path, u, n))
            return true;
    }
    return false;
}

static bool resource_matches(const rule *r, const fl_auth_attrs *at)
{
    if (r->namespaces.n && !has(&r->namespaces, at->ns ? at->ns : ""))
        return false;
    if (!r->nres)
        return true;
    const char *res = at->resource ? at->resource : "", *sub = at->subresource ? at->subresource : "";
    const char *group = at->group ? at->group : "", *name = at->name ? at->name : "";
    size_t rn = strlen(res);
    for (size_t i = 0; i < r->nres; i++) {
        const group_resources *g = &r->res[i];
        if (strcmp(g->group, group))
            continue;
        if (!g->resources.n)
            return true;
        if (g->names.n && !has(&g->names, name))
            continue;
        for (size_t j = 0; j < g->resources.n; j++) {
            const char *want = g->resources.v[j];
            if (!strcmp(want, "*"))
                return true;
            if (!sub[0]) {
                if (!strcmp(want, res))
                    return true;
                continue;
            }
            /* with a subresource: "res/sub", "*\/sub" or "res/\*" */
            const char *slash = strchr(want, '/');
            if (!slash)
                continue;
            size_t wn = (size_t)(slash - want);
            bool res_ok = (wn == 1 && want[0] == '*') || (wn == rn && !strncmp(want, res, rn));
            bool sub_ok = !strcmp(slash + 1, sub);
            bool any_sub = !strcmp(slash + 1, "*") && wn == rn && !strncmp(want, res, rn);
            if ((res_ok && sub_ok) || any_sub)
                return true;
        }
    }
    return false;
}

static bool rule_matches(const rule *r, const fl_auth_attrs *at)
{
    if (r->users.n && (!at->who || !has(&r->users, at->who->user)))
        return false;
    if (r->groups.n) {
        bool any = false;
        for (size_t i = 0; at->who && !any && i < at->who->ngroups; i++)
            any = has(&r->groups, at->who->groups[i]);
        if (!any)
            return false;
    }
    if (r->verbs.n && !has(&r->verbs, at->verb ? at->verb : ""))
        return false;
    bool resource_request = at->path == NULL;
    if (r->namespaces.n || r->nres)
        return resource_request && resource_matches(r, at);
    if (r->urls.n)
        return !resource_request && url_matches(&r->urls, at->path);
    return true;
}

fl_audit_decision fl_audit_policy_decide(const fl_audit_policy *p, const fl_auth_attrs *at)
{
    fl_audit_decision d = {FL_AUDIT_NONE, p ? p->omit_stages : 0, p && p->omit_managed};
    for (size_t i = 0; p && i < p->nrules; i++) {
        const rule *r = &p->rules[i];
        if (rule_matches(r, at)) {
            d.level = r->level;
            d.omit_stages = r->omit_stages;
            d.omit_managed_fields = r->omit_managed >= 0 ? r->omit_managed : p->omit_managed;
            return d;
        }
    }
    return d;
}
