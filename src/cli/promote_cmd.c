/* promote_cmd.c - `flotilla ctl promote`: take a workload that already runs in a member
 * cluster under the control plane's management, without restarting it (docs/migration.md).
 *
 *   flotilla ctl promote KIND[,KIND...] (NAME | --all | -l SELECTOR) [-n NS] --cluster C
 *       [--cluster-kubeconfig F [--cluster-context X]] [--dry-run] [-o yaml|json]
 *
 * As `karmadactl promote`: the object is read from member C, stripped of what the member owns,
 * and written to the control plane as a resource template, with a policy that selects exactly
 * it and places it on C alone with conflictResolution Overwrite, so the executor takes the
 * member's object over instead of refusing it. The policy has propagateDeps: the ConfigMaps,
 * Secrets, ServiceAccount and PersistentVolumeClaims the workload refers to (the native
 * GetDependencies, the one the dependencies distributor runs) are promoted from the member too,
 * as templates without a policy of their own: the distributor's attached bindings deliver them
 * where the workload goes, and their conflict-resolution annotation lets those bindings take
 * the member's copies over.
 *
 * Stripped: status; every metadata field but name, namespace, labels and annotations (uid,
 * resourceVersion, generation, creationTimestamp, managedFields, ownerReferences, finalizers);
 * the annotations the member's controllers and kubectl keep (deployment.kubernetes.io/revision,
 * kubectl's last-applied-configuration) and any Karmada mark left from an earlier management;
 * and what the member allocated for itself: a Service's clusterIP(s), a Pod's nodeName, a
 * claim's volumeName and binding annotations, a ServiceAccount's token Secrets. Fields the
 * member's API server defaulted stay: the control plane defaults the same fields to the same
 * values, and a manifest equal to the member's object is what lets the executor write only its
 * labels and annotations (no new generation, no new pod template, no restart).
 *
 * Promote writes its mark (migration.flotilla.io/promoted-from: C) on every template and
 * policy it writes: with the adoption allow-list enforced, the mark is its own permission.
 *
 * The member: --cluster-kubeconfig (and --cluster-context) as karmadactl takes them; without
 * them, a Push cluster is reached with what the control plane holds for it (spec.apiEndpoint
 * and the token and CA of its secretRef), and a Pull cluster must be given a kubeconfig.
 *
 * Nothing is half-written: for each workload, its dependencies, template and policy are
 * created in that order, and what this run created for it is deleted again when a later step
 * fails. A template that already exists on the control plane is not touched (bulk: skipped and
 * said so; one NAME: an error). Exit codes: 0 done, 1 failure (one line on stderr), 2 usage. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "cli/kind_resolve.h"
#include "cli/promote_cmd.h"
#include "client/client.h"
#include "client/kubeconfig.h"
#include "controllers/names.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/wellknown.h"
#include "interp/interp.h"

#define VERB "promote"

static const fl_gvr NAMESPACES = {"v1", "namespaces"};
static const fl_gvr SECRETS = {"v1", "secrets"};
static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};
static const fl_gvr PPS = {"policy.karmada.io/v1alpha1", "propagationpolicies"};
static const fl_gvr CPPS = {"policy.karmada.io/v1alpha1", "clusterpropagationpolicies"};

typedef struct opts {
    const char *kubeconfig, *context, *cluster_kubeconfig, *cluster_context, *cluster, *ns, *selector, *output;
    const char *kinds, *name;
    bool all, dry_run, ns_given;
} opts;

/* One object to write on the control plane. */
typedef struct action {
    fl_cli_kind kind;    /* owned */
    json_t *obj;         /* what is written */
    const char *role;    /* "template", "dependency" or "policy" */
    bool done;           /* created by this run */
} action;

typedef struct run {
    const opts *o;
    fl_client *cp, *mc;
    fl_interp *ip;
    json_t *planned;     /* "apiVersion|kind|ns|name" of every template planned: a shared dependency once */
    json_t *out;         /* -o: the objects written (or to be written) */
    fl_strbuf table;     /* --dry-run without -o: its rows */
    char **cells;
    size_t nrows;
    int failed, skipped, promoted;
} run;

static void usage(void)
{
    printf("Usage: flotilla ctl promote KIND[,KIND...] (NAME | --all | -l SELECTOR) [-n NS] --cluster CLUSTER [options]\n"
           "\n"
           "Take objects that already run in member CLUSTER under the control plane's management without\n"
           "restarting them: each becomes a resource template with a PropagationPolicy that places it on\n"
           "CLUSTER (conflictResolution: Overwrite, propagateDeps: true); the ConfigMaps, Secrets,\n"
           "ServiceAccount and PersistentVolumeClaims it refers to are promoted with it (docs/migration.md).\n"
           "\n"
           "Options:\n"
           "  --cluster NAME              the member cluster to promote from (required)\n"
           "  -n, --namespace NS          namespace of the objects (default: default)\n"
           "  --all                       every object of KIND in the namespace\n"
           "  -l, --selector SELECTOR     the objects of KIND in the namespace with these labels\n"
           "  --dry-run                   print what would be written, write nothing\n"
           "  -o, --output yaml|json      print the objects written (or, with --dry-run, to be written)\n"
           "  --cluster-kubeconfig FILE   the member's kubeconfig (default: for a Push cluster, the endpoint\n"
           "                              and credentials the control plane holds for it)\n"
           "  --cluster-context NAME      context in that kubeconfig\n"
           "  --kubeconfig FILE           the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
           "  --context NAME              context in that kubeconfig\n");
}

static int parse(int argc, char **argv, opts *o, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(opts, kubeconfig)},
        {"context", NULL, offsetof(opts, context)},
        {"cluster-kubeconfig", NULL, offsetof(opts, cluster_kubeconfig)},
        {"cluster-context", NULL, offsetof(opts, cluster_context)},
        {"cluster", NULL, offsetof(opts, cluster)},
        {"namespace", "n", offsetof(opts, ns)},
        {"selector", "l", offsetof(opts, selector)},
        {"output", "o", offsetof(opts, output)},
    };
    const char *pos[3] = {0};
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (!strcmp(a, "--all") || !strcmp(a, "--dry-run") || !strcmp(a, "--dry-run=client") ||
            !strcmp(a, "--dry-run=server")) {
            *(a[2] == 'a' ? &o->all : &o->dry_run) = true;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            const char *why = fl_cli_take_flag(flags, sizeof flags / sizeof *flags, argc, argv, &i, o);
            if (why)
                return fl_ctl_out_usage(VERB, why, a);
            continue;
        }
        if (npos == 3)
            return fl_ctl_out_usage(VERB, "unexpected argument \"%s\"", a);
        pos[npos++] = a;
    }
    if (npos == 0)
        return fl_ctl_out_usage(VERB, "%s", "a KIND is required (for example: promote deployment web --cluster member1)");
    o->kinds = pos[0];
    const char *slash = strchr(o->kinds, '/');
    if (slash && npos == 1) { /* KIND/NAME */
        static char kind_buf[256];
        snprintf(kind_buf, sizeof kind_buf, "%.*s", (int)(slash - o->kinds), o->kinds);
        o->name = slash + 1;
        o->kinds = kind_buf;
    } else if (npos >= 2) {
        o->name = pos[1];
    }
    if (npos > 2)
        return fl_ctl_out_usage(VERB, "unexpected argument \"%s\"", pos[2]);
    if (!o->cluster || !*o->cluster)
        return fl_ctl_out_usage(VERB, "%s", "--cluster NAME is required: the member cluster to promote from");
    int ways = (o->name != NULL) + o->all + (o->selector != NULL);
    if (ways != 1)
        return fl_ctl_out_usage(VERB, "%s", "name exactly one of: a NAME, --all, or -l SELECTOR");
    if (o->name && (!*o->name || strchr(o->kinds, ',')))
        return fl_ctl_out_usage(VERB, "%s", "a NAME goes with one KIND");
    if (o->output && strcmp(o->output, "yaml") && strcmp(o->output, "json"))
        return fl_ctl_out_usage(VERB, "-o %s: expected yaml or json", o->output);
    o->ns_given = o->ns != NULL;
    if (!o->ns)
        o->ns = "default";
    return 0;
}

/* ---- the member ---- */

/* A client for cluster C: its kubeconfig, or (Push) the control plane's record of it. */
static int member_client(const opts *o, fl_client *cp, fl_client **out)
{
    *out = NULL;
    fl_kubeconfig kc;
    char *err = NULL;
    int rc;
    if (o->cluster_kubeconfig) {
        rc = fl_kubeconfig_load(o->cluster_kubeconfig, o->cluster_context, &kc, &err);
        if (rc == 0)
            rc = fl_client_new(&kc, &(fl_client_options){.user_agent = "flotilla-ctl"}, out, &err);
        fl_kubeconfig_close(&kc);
        if (rc) {
            fl_ctl_out_fail(VERB, "cluster kubeconfig: %s", err ? err : fl_strerror(rc));
            free(err);
            return 1;
        }
        return 0;
    }
    json_t *cl = NULL, *sec = NULL;
    fl_client_error ce = {0};
    rc = fl_client_get(cp, &CLUSTERS, NULL, o->cluster, &cl, &ce);
    if (rc == FL_ENOTFOUND)
        return fl_ctl_out_fail(VERB, "cluster \"%s\" is not joined to the control plane (flotilla ctl join, or "
                                     "--cluster-kubeconfig)", o->cluster);
    if (rc)
        return fl_ctl_out_fail(VERB, "reading cluster %s: %s", o->cluster, fl_errmsg(ce.message, rc));
    const json_t *spec = json_object_get(cl, "spec");
    const char *mode = fl_json_str(spec, "syncMode"), *ep = fl_json_str(spec, "apiEndpoint");
    const json_t *ref = json_object_get(spec, "secretRef");
    if ((mode && strcmp(mode, "Push")) || !ep || !fl_json_str(ref, "name")) {
        json_decref(cl);
        return fl_ctl_out_fail(VERB, "cluster %s is in Pull mode (or has no endpoint and secretRef): the control plane "
                                     "cannot reach it; give its kubeconfig with --cluster-kubeconfig", o->cluster);
    }
    rc = fl_client_get(cp, &SECRETS, fl_json_str(ref, "namespace") ? fl_json_str(ref, "namespace") : "karmada-cluster",
                       fl_json_str(ref, "name"), &sec, &ce);
    if (rc) {
        fl_ctl_out_fail(VERB, "reading the credentials of cluster %s (Secret %s): %s", o->cluster,
                        fl_json_str(ref, "name"), fl_errmsg(ce.message, rc));
        json_decref(cl);
        return 1;
    }
    const json_t *data = json_object_get(sec, "data");
    size_t n = 0;
    char *token = fl_json_str(data, "token") ? fl_base64_decode(fl_json_str(data, "token"), &n) : NULL;
    char *ca = fl_json_str(data, "caBundle") ? fl_base64_decode(fl_json_str(data, "caBundle"), &n) : NULL;
    fl_kubeconfig_init(&kc, ep, token);
    if (ca && *ca)
        kc.ca_pem = fl_strdup(ca);
    kc.insecure = json_is_true(json_object_get(spec, "insecureSkipTLSVerification"));
    rc = fl_client_new(&kc, &(fl_client_options){.user_agent = "flotilla-ctl"}, out, &err);
    fl_kubeconfig_close(&kc);
    free(token);
    free(ca);
    json_decref(sec);
    json_decref(cl);
    if (rc) {
        fl_ctl_out_fail(VERB, "cluster %s: %s", o->cluster, err ? err : fl_strerror(rc));
        free(err);
        return 1;
    }
    return 0;
}

/* ---- the template ---- */

/* Annotations the member's controllers and clients keep for themselves, and Karmada's marks
 * (an object managed before, then released by hand, may still carry some). */
static const char *const MEMBER_ANNOTATIONS[] = {
    "deployment.kubernetes.io/revision",      "kubectl.kubernetes.io/last-applied-configuration",
    "pv.kubernetes.io/bind-completed",        "pv.kubernetes.io/bound-by-controller",
    "volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node",     FL_WORK_NAME_ANNOTATION,
    FL_WORK_NAMESPACE_ANNOTATION,             FL_CONFLICT_RESOLUTION_ANNOTATION,
    FL_TEMPLATE_UID_ANNOTATION,               FL_TEMPLATE_GENERATION_ANNOTATION,
    FL_MANAGED_LABELS_ANNOTATION,             FL_MANAGED_ANNOTATIONS_ANNOTATION,
    FL_RB_NAME_ANNOTATION,                    FL_RB_NAMESPACE_ANNOTATION,
    FL_CRB_NAME_ANNOTATION,                   FL_PP_NAME_ANNOTATION,
    FL_PP_NAMESPACE_ANNOTATION,               FL_CPP_NAME_ANNOTATION,
    NULL};
static const char *const MEMBER_LABELS[] = {FL_MANAGED_LABEL, FL_RB_ID_LABEL, FL_CRB_ID_LABEL, FL_WORK_ID_LABEL,
                                            FL_PP_ID_LABEL, FL_CPP_ID_LABEL, NULL};

static void drop_keys(json_t *md, const char *map, const char *const *keys)
{
    json_t *m = json_object_get(md, map);
    for (size_t i = 0; json_is_object(m) && keys[i]; i++)
        json_object_del(m, keys[i]);
    if (json_is_object(m) && !json_object_size(m))
        json_object_del(md, map);
}

/* The template made of member object obj (see the file's comment). A new object. */
static json_t *strip(const json_t *obj, const char *cluster)
{
    json_t *t = fl_json_deep_copy(obj);
    json_object_del(t, "status");
    const json_t *om = json_object_get(obj, "metadata");
    json_t *md = json_object();
    static const char *const keep[] = {"name", "namespace", "labels", "annotations"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        if (json_object_get(om, keep[i]))
            json_object_set_new(md, keep[i], fl_json_deep_copy(json_object_get(om, keep[i])));
    drop_keys(md, "annotations", MEMBER_ANNOTATIONS);
    drop_keys(md, "labels", MEMBER_LABELS);
    json_object_set_new(fl_json_ensure_obj(md, "annotations"), FL_PROMOTED_FROM_ANNOTATION, json_string(cluster));
    json_object_set_new(t, "metadata", md);
    /* what the member allocated for itself */
    const char *av = fl_json_str(obj, "apiVersion"), *kind = fl_json_str(obj, "kind");
    json_t *spec = json_object_get(t, "spec");
    if (av && !strcmp(av, "v1") && kind && json_is_object(spec)) {
        if (!strcmp(kind, "Service")) {
            const char *ip = fl_json_str(spec, "clusterIP");
            if (!ip || strcmp(ip, "None")) { /* headless stays headless */
                json_object_del(spec, "clusterIP");
                json_object_del(spec, "clusterIPs");
            }
        } else if (!strcmp(kind, "Pod")) {
            json_object_del(spec, "nodeName");
        } else if (!strcmp(kind, "PersistentVolumeClaim")) {
            json_object_del(spec, "volumeName");
        }
    }
    if (av && !strcmp(av, "v1") && kind && !strcmp(kind, "ServiceAccount"))
        json_object_del(t, "secrets");
    return t;
}

/* The policy that selects exactly template t (of kind k) and places it on cluster. */
static json_t *policy_for(const json_t *t, const fl_cli_kind *k, const char *cluster)
{
    char *name = fl_asprintf("%s-%s", fl_json_meta(t, "name"), k->kind);
    for (char *p = name; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (strlen(name) > 253)
        name[253] = '\0';
    json_t *sel = json_pack("{s:s, s:s, s:s}", "apiVersion", k->api_version, "kind", k->kind, "name",
                            fl_json_meta(t, "name"));
    json_t *spec = json_pack("{s:[o], s:{s:{s:[s]}}, s:s}", "resourceSelectors", sel, "placement", "clusterAffinity",
                             "clusterNames", cluster, "conflictResolution", "Overwrite");
    if (k->namespaced)
        json_object_set_new(spec, "propagateDeps", json_true());
    json_t *p = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:o}", "apiVersion", PPS.api_version, "kind",
                          k->namespaced ? "PropagationPolicy" : "ClusterPropagationPolicy", "metadata", "name", name,
                          "annotations", FL_PROMOTED_FROM_ANNOTATION, cluster, "spec", spec);
    if (k->namespaced)
        json_object_set_new(json_object_get(p, "metadata"), "namespace", json_string(fl_json_meta(t, "namespace")));
    free(name);
    return p;
}

/* ---- planning ---- */

static void kind_copy(fl_cli_kind *dst, const fl_cli_kind *src)
{
    dst->api_version = fl_strdup(src->api_version);
    dst->resource = fl_strdup(src->resource);
    dst->kind = fl_strdup(src->kind);
    dst->namespaced = src->namespaced;
}

static void add_action(action **acts, size_t *n, const fl_cli_kind *k, json_t *obj, const char *role)
{
    *acts = fl_realloc(*acts, (*n + 1) * sizeof **acts);
    action *a = &(*acts)[(*n)++];
    memset(a, 0, sizeof *a);
    kind_copy(&a->kind, k);
    a->obj = obj;
    a->role = role;
}

static void actions_free(action *acts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fl_cli_kind_close(&acts[i].kind);
        json_decref(acts[i].obj);
    }
    free(acts);
}

static const char *ns_of(const fl_cli_kind *k, const json_t *obj)
{
    return k->namespaced ? fl_json_meta(obj, "namespace") : NULL;
}

/* Does the control plane have obj (of kind k) already? */
static bool on_control_plane(run *r, const fl_cli_kind *k, const char *ns, const char *name)
{
    json_t *have = NULL;
    bool there = fl_client_get(r->cp, &(fl_gvr){k->api_version, k->resource}, ns, name, &have, NULL) == 0;
    json_decref(have);
    return there;
}

/* The dependencies of member object obj, as actions (dependency templates read from the
 * member). A dependency missing in the member, or already on the control plane, is left
 * out (and said so on stderr). */
static void plan_dependencies(run *r, const json_t *obj, action **acts, size_t *n)
{
    json_t *deps = NULL;
    char *err = NULL;
    if (!fl_interp_has(r->ip, fl_json_str(obj, "apiVersion"), fl_json_str(obj, "kind"), FL_INTERP_DEPENDENCY))
        return; /* a kind without dependencies */
    if (fl_interp_get_dependencies(r->ip, obj, &deps, &err)) {
        fprintf(stderr, "flotilla ctl promote: %s/%s: its dependencies could not be read: %s\n",
                fl_json_str(obj, "kind"), fl_json_meta(obj, "name"), err ? err : "?");
        free(err);
        return;
    }
    size_t i;
    json_t *d;
    json_array_foreach(deps, i, d) {
        const char *dk = fl_json_str(d, "kind"), *dn = fl_json_str(d, "name");
        const char *dns = fl_json_str(d, "namespace") ? fl_json_str(d, "namespace") : fl_json_meta(obj, "namespace");
        if (!dk || !dn || !dns)
            continue;
        /* the dependency kinds are all core v1; their plurals are the lower-cased kind + s */
        fl_cli_kind k = {.api_version = (char *)"v1", .kind = (char *)dk, .namespaced = true};
        char plural[64];
        snprintf(plural, sizeof plural, "%ss", dk);
        for (char *p = plural; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        k.resource = plural;
        char *key = fl_cat("v1|", dk, "|", dns, "|", dn, NULL);
        bool seen = json_object_get(r->planned, key) != NULL;
        json_object_set_new(r->planned, key, json_true());
        free(key);
        if (seen)
            continue;
        json_t *dobj = NULL;
        fl_client_error ce = {0};
        int rc = fl_client_get(r->mc, &(fl_gvr){"v1", plural}, dns, dn, &dobj, &ce);
        if (rc) {
            fprintf(stderr, "flotilla ctl promote: %s %s/%s (a dependency of %s/%s) %s in cluster %s: not promoted\n", dk,
                    dns, dn, fl_json_str(obj, "kind"), fl_json_meta(obj, "name"),
                    rc == FL_ENOTFOUND ? "is not there" : "cannot be read", r->o->cluster);
            continue;
        }
        if (on_control_plane(r, &k, dns, dn)) {
            json_decref(dobj);
            continue; /* the control plane's own copy goes */
        }
        json_t *t = strip(dobj, r->o->cluster);
        json_decref(dobj);
        /* no policy of its own: the attached binding takes the member's copy over by this */
        json_object_set_new(fl_json_ensure_obj(json_object_get(t, "metadata"), "annotations"),
                            FL_CONFLICT_RESOLUTION_ANNOTATION, json_string("overwrite"));
        add_action(acts, n, &k, t, "dependency");
    }
    json_decref(deps);
}

/* ---- writing ---- */

static int ensure_namespace(run *r, const char *ns)
{
    json_t *have = NULL;
    if (fl_client_get(r->cp, &NAMESPACES, NULL, ns, &have, NULL) == 0) {
        json_decref(have);
        return 0;
    }
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", ns);
    fl_client_error ce = {0};
    int rc = fl_client_create(r->cp, &NAMESPACES, NULL, obj, NULL, NULL, &ce);
    json_decref(obj);
    if (rc && rc != FL_EEXIST)
        return fl_ctl_out_fail(VERB, "creating namespace %s on the control plane: %s", ns, fl_errmsg(ce.message, rc));
    return 0;
}

/* Create every action in order; on a failure delete what was created (in reverse). */
static int write_actions(run *r, action *acts, size_t n, char **why)
{
    for (size_t i = 0; i < n; i++) {
        action *a = &acts[i];
        fl_gvr g = {a->kind.api_version, a->kind.resource};
        if (!strcmp(a->role, "policy"))
            g = a->kind.namespaced ? PPS : CPPS;
        fl_client_error ce = {0};
        int rc = fl_client_create(r->cp, &g, ns_of(&a->kind, a->obj), a->obj, NULL, NULL, &ce);
        if (rc == FL_EEXIST && !strcmp(a->role, "dependency"))
            continue; /* written meanwhile (another workload's): theirs goes */
        if (rc) {
            *why = fl_asprintf("creating %s %s/%s on the control plane: %s", a->role, fl_json_str(a->obj, "kind"),
                               fl_json_meta(a->obj, "name"), fl_errmsg(ce.message, rc));
            for (size_t j = i; j-- > 0;) {
                action *b = &acts[j];
                if (!b->done)
                    continue;
                fl_gvr bg = {b->kind.api_version, b->kind.resource};
                if (!strcmp(b->role, "policy"))
                    bg = b->kind.namespaced ? PPS : CPPS;
                fl_client_delete(r->cp, &bg, ns_of(&b->kind, b->obj), fl_json_meta(b->obj, "name"), NULL, NULL, NULL);
            }
            return 1;
        }
        a->done = true;
    }
    return 0;
}

/* ---- promoting a released template again ---- */

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};
#define LIFT_TRIES 25
#define LIFT_POLL_MS 200

static int unmark(run *r, const fl_gvr *g, const char *ns, const char *name)
{
    static const char patch[] = "{\"metadata\":{\"annotations\":{\"" FL_RELEASE_ANNOTATION "\":null}}}";
    int rc = fl_client_patch(r->cp, g, ns, name, FL_PATCH_MERGE, patch, sizeof patch - 1, NULL, NULL, NULL);
    return rc == FL_ENOTFOUND ? 0 : rc;
}

/* Lift the release of binding name (g, ns), then of its Works: the binding controller keeps
 * a release it finds on a Work (it may be the user's), so the Works' go here, after the
 * binding's, and again while a render from the binding as it was puts one back (bounded). */
static int unmark_binding(run *r, const fl_gvr *g, const char *ns, const char *name)
{
    json_t *b = NULL;
    if (fl_client_get(r->cp, g, ns, name, &b, NULL))
        return 0;
    const char *key = g == &RBS ? FL_RB_ID_LABEL : FL_CRB_ID_LABEL;
    char *sel = fl_json_meta_map(b, "labels", key) ? fl_asprintf("%s=%s", key, fl_json_meta_map(b, "labels", key)) : NULL;
    json_decref(b);
    int rc = unmark(r, g, ns, name);
    for (int t = 0; sel && rc == 0 && t < LIFT_TRIES; t++) {
        fl_list_result l = {0};
        rc = fl_client_list_all(r->cp, &WORKS, NULL, &(fl_list_opts){.label_selector = sel}, NULL, &l, NULL);
        int left = 0;
        size_t i;
        json_t *w;
        json_array_foreach(l.items, i, w) {
            if (rc == 0 && fl_json_meta_map(w, "annotations", FL_RELEASE_ANNOTATION)) {
                left++;
                rc = unmark(r, &WORKS, fl_json_meta(w, "namespace"), fl_json_meta(w, "name"));
            }
        }
        fl_list_result_close(&l);
        if (!left)
            break;
        nanosleep(&(struct timespec){.tv_nsec = LIFT_POLL_MS * 1000000L}, NULL);
    }
    free(sel);
    return rc;
}

/* A template promote wrote before whose binding was released (`flotilla ctl release`) and
 * that is still on the control plane: lift the release from its binding, its policy and the
 * attached bindings of its dependencies, and the executor takes the member's objects over
 * again through the policy's Overwrite. 1 when it was such a template (*rc: 0 or the first
 * write's FL_E*), 0 when it is not. */
static int lift_release(run *r, const fl_cli_kind *k, const char *ns, const char *name, int *rc)
{
    *rc = 0;
    json_t *t = NULL, *b = NULL;
    fl_client_get(r->cp, &(fl_gvr){k->api_version, k->resource}, ns, name, &t, NULL);
    char *bname = fl_names_binding(k->kind, name);
    const fl_gvr *bg = k->namespaced ? &RBS : &CRBS;
    fl_client_get(r->cp, bg, ns, bname, &b, NULL);
    const char *rel = fl_json_meta_map(b, "annotations", FL_RELEASE_ANNOTATION);
    int found = t && fl_json_meta_map(t, "annotations", FL_PROMOTED_FROM_ANNOTATION) && rel && !strcmp(rel, "true");
    if (found && !r->o->dry_run) {
        const char *pp = fl_json_meta_map(t, "annotations", FL_PP_NAME_ANNOTATION);
        const char *cpp = fl_json_meta_map(t, "annotations", FL_CPP_NAME_ANNOTATION);
        if (pp)
            *rc = unmark(r, &PPS, fl_json_meta_map(t, "annotations", FL_PP_NAMESPACE_ANNOTATION), pp);
        else if (cpp)
            *rc = unmark(r, &CPPS, NULL, cpp);
        if (!*rc && k->namespaced) { /* the attached bindings of its dependencies */
            fl_list_result l = {0};
            if (fl_client_list_all(r->cp, &RBS, ns, NULL, NULL, &l, NULL) == 0) {
                size_t i, j;
                json_t *ab, *req;
                json_array_foreach(l.items, i, ab) json_array_foreach(json_object_get(json_object_get(ab, "spec"), "requiredBy"), j, req)
                {
                    if (!*rc && fl_json_str(req, "name") && !strcmp(fl_json_str(req, "name"), bname))
                        *rc = unmark_binding(r, &RBS, ns, fl_json_meta(ab, "name"));
                }
                fl_list_result_close(&l);
            }
        }
        if (!*rc)
            *rc = unmark_binding(r, bg, ns, bname);
    }
    free(bname);
    json_decref(b);
    json_decref(t);
    return found;
}

/* Promote one member object obj of kind k (i of total, for progress). */
static void promote_one(run *r, const fl_cli_kind *k, const json_t *obj, size_t i, size_t total, bool single)
{
    const char *name = fl_json_meta(obj, "name"), *ns = ns_of(k, obj);
    const char *slash = strchr(k->api_version, '/');
    char *qual = slash ? fl_asprintf("%s.%.*s/%s", k->kind, (int)(slash - k->api_version), k->api_version, name)
                       : fl_asprintf("%s/%s", k->kind, name);
    for (char *c = qual; *c && *c != '.' && *c != '/'; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    /* an object a member controller made (a ReplicaSet's Pod, a Deployment's ReplicaSet) is
     * its owner's to manage: promote the owner */
    size_t oi;
    json_t *ref;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), oi, ref) {
        if (!json_is_true(json_object_get(ref, "controller")))
            continue;
        if (single) {
            fl_ctl_out_fail(VERB, "%s is controlled by %s %s in cluster %s: promote that instead", qual,
                            fl_json_str(ref, "kind"), fl_json_str(ref, "name"), r->o->cluster);
            r->failed++;
        } else {
            fprintf(stderr, "(%zu/%zu) %s: skipped, controlled by %s %s\n", i, total, qual, fl_json_str(ref, "kind"),
                    fl_json_str(ref, "name"));
            r->skipped++;
        }
        free(qual);
        return;
    }
    int lrc = 0;
    if (lift_release(r, k, ns, name, &lrc)) {
        if (lrc) {
            fl_ctl_out_fail(VERB, "%s: lifting its release: %s", qual, fl_strerror(lrc));
            r->failed++;
        } else {
            printf("%s %s: its release %s lifted; Flotilla takes %s's copy over again\n", qual,
                   r->o->dry_run ? "(dry run)" : "promoted again", r->o->dry_run ? "would be" : "is", r->o->cluster);
            r->promoted++;
        }
        free(qual);
        return;
    }
    if (on_control_plane(r, k, ns, name)) {
        if (single) {
            fl_ctl_out_fail(VERB, "%s already exists on the control plane%s%s: edit its policy to place it instead",
                            qual, ns ? " in namespace " : "", ns ? ns : "");
            r->failed++;
        } else {
            fprintf(stderr, "(%zu/%zu) %s: skipped, it is on the control plane already\n", i, total, qual);
            r->skipped++;
        }
        free(qual);
        return;
    }
    action *acts = NULL;
    size_t n = 0;
    if (k->namespaced)
        plan_dependencies(r, obj, &acts, &n);
    size_t ndeps = n;
    json_t *t = strip(obj, r->o->cluster);
    json_t *p = policy_for(t, k, r->o->cluster);
    add_action(&acts, &n, k, t, "template");
    add_action(&acts, &n, k, p, "policy");
    for (size_t j = 0; j < n; j++) {
        if (r->o->output)
            json_array_append(r->out, acts[j].obj);
        if (r->o->dry_run && !r->o->output) {
            r->cells = fl_realloc(r->cells, (r->nrows + 1) * 5 * sizeof *r->cells);
            char **row = r->cells + r->nrows++ * 5;
            row[0] = fl_ctl_out_none(ns);
            row[1] = fl_strdup(fl_json_str(acts[j].obj, "kind"));
            row[2] = fl_strdup(fl_json_meta(acts[j].obj, "name"));
            row[3] = fl_strdup(acts[j].role);
            row[4] = !strcmp(acts[j].role, "policy")
                         ? fl_asprintf("create: places %s on %s, Overwrite%s", name, r->o->cluster,
                                       k->namespaced ? ", propagateDeps" : "")
                         : fl_asprintf("create from %s's copy; adopt it there", r->o->cluster);
        }
    }
    if (r->o->dry_run) {
        r->promoted++;
        actions_free(acts, n);
        free(qual);
        return;
    }
    char *why = NULL;
    if ((ns && ensure_namespace(r, ns)) || write_actions(r, acts, n, &why)) {
        if (why)
            fl_ctl_out_fail(VERB, "%s: %s (nothing of it was kept)", qual, why);
        free(why);
        r->failed++;
    } else {
        r->promoted++;
        if (!r->o->output) {
            printf("%s promoted from %s: template and %s %s", qual, r->o->cluster,
                   k->namespaced ? "propagationpolicy" : "clusterpropagationpolicy", fl_json_meta(p, "name"));
            if (ndeps) {
                printf(", with");
                for (size_t j = 0; j < ndeps; j++)
                    printf("%s %s/%s", j ? "," : "", fl_json_str(acts[j].obj, "kind"), fl_json_meta(acts[j].obj, "name"));
            }
            printf("\n");
            if (total > 1 && (i % 50 == 0 || i == total))
                fprintf(stderr, "promoted %zu/%zu\n", i, total);
        }
    }
    fflush(stdout);
    actions_free(acts, n);
    free(qual);
}

/* Groups whose kinds are the control plane's own: never templates. */
static bool no_template(const fl_cli_kind *k)
{
    const char *slash = strchr(k->api_version, '/');
    size_t gl = slash ? (size_t)(slash - k->api_version) : 0;
    static const char *const own[] = {"karmada.io", "flotilla.io"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        size_t ol = strlen(own[i]);
        if (gl >= ol && !strncmp(k->api_version + gl - ol, own[i], ol))
            return true;
    }
    return !slash && (!strcmp(k->kind, "Event") || !strcmp(k->kind, "Namespace") || !strcmp(k->kind, "Node"));
}

/* Promote the objects of one typed kind. 0, or 1 when the kind is no good (said why). */
static int promote_kind(run *r, const char *typed)
{
    const opts *o = r->o;
    fl_cli_kind k;
    if (fl_cli_kind_resolve(r->cp, typed, VERB, &k))
        return 1;
    if (no_template(&k)) {
        fl_ctl_out_fail(VERB, "%s (%s) cannot be promoted: the control plane has no resource templates of that kind",
                        typed, k.api_version);
        fl_cli_kind_close(&k);
        return 1;
    }
    if (!k.namespaced && o->ns_given) {
        fl_ctl_out_fail(VERB, "%s is cluster-scoped: it takes no --namespace", k.resource);
        fl_cli_kind_close(&k);
        return 1;
    }
    const char *ns = k.namespaced ? o->ns : NULL;
    fl_gvr g = {k.api_version, k.resource};
    fl_client_error ce = {0};
    if (o->name) {
        json_t *obj = NULL;
        int rc = fl_client_get(r->mc, &g, ns, o->name, &obj, &ce);
        if (rc == FL_ENOTFOUND)
            fl_ctl_out_fail(VERB, "%s \"%s\" not found%s%s in cluster %s", k.resource, o->name,
                            ns ? " in namespace " : "", ns ? ns : "", o->cluster);
        else if (rc)
            fl_ctl_out_fail(VERB, "reading %s %s from cluster %s: %s", k.resource, o->name, o->cluster,
                            fl_errmsg(ce.message, rc));
        else
            promote_one(r, &k, obj, 1, 1, true);
        if (rc)
            r->failed++;
        json_decref(obj);
        fl_cli_kind_close(&k);
        return 0;
    }
    fl_list_result l = {0};
    fl_list_opts lo = {.label_selector = o->selector};
    int rc = fl_client_list_all(r->mc, &g, ns, &lo, NULL, &l, &ce);
    if (rc) {
        fl_ctl_out_fail(VERB, "listing %s in cluster %s: %s", k.resource, o->cluster, fl_errmsg(ce.message, rc));
        r->failed++;
        fl_cli_kind_close(&k);
        return 0;
    }
    size_t total = json_array_size(l.items), i;
    json_t *obj;
    json_array_foreach(l.items, i, obj) {
        /* a Flotilla-managed object is the control plane's already */
        const char *m = fl_json_meta_map(obj, "labels", FL_MANAGED_LABEL);
        if (m && !strcmp(m, "true")) {
            fprintf(stderr, "(%zu/%zu) %s/%s: skipped, Flotilla manages it already\n", i + 1, total, k.resource,
                    fl_json_meta(obj, "name"));
            r->skipped++;
            continue;
        }
        promote_one(r, &k, obj, i + 1, total, false);
    }
    fl_list_result_close(&l);
    fl_cli_kind_close(&k);
    return 0;
}

int fl_ctl_promote(int argc, char **argv)
{
    opts o = {0};
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage();
        return 0;
    }
    if (rc)
        return rc;
    run r = {.o = &o, .planned = json_object(), .out = json_array()};
    if (fl_cli_control_plane(o.kubeconfig, o.context, VERB, &r.cp) || member_client(&o, r.cp, &r.mc)) {
        rc = 1;
        goto out;
    }
    r.ip = fl_interp_new();
    char *kinds = fl_strdup(o.kinds), *save = NULL;
    for (char *t = strtok_r(kinds, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save))
        rc = promote_kind(&r, t);
    free(kinds);
    if (rc)
        goto out;
    if (o.output) {
        json_t *list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", r.out);
        fl_ctl_out_doc(o.output, list);
        json_decref(list);
    } else if (o.dry_run) {
        static const char *const hdr[] = {"NAMESPACE", "KIND", "NAME", "ROLE", "ACTION (dry run)"};
        size_t width[5] = {0};
        if (r.nrows)
            fl_ctl_out_table(&r.table, hdr, 5, r.cells, r.nrows, NULL, width);
        fputs(r.table.p ? r.table.p : "", stdout);
        printf("%d workload%s would be promoted from %s (%zu object%s to write)%s; nothing was written\n", r.promoted,
               r.promoted == 1 ? "" : "s", o.cluster, r.nrows, r.nrows == 1 ? "" : "s",
               r.skipped ? ", some skipped (see above)" : "");
    } else if (!o.name) {
        printf("%d promoted from %s, %d skipped, %d failed\n", r.promoted, o.cluster, r.skipped, r.failed);
    }
    rc = r.failed || (o.name && !r.promoted) ? 1 : 0;
out:
    for (size_t i = 0; i < r.nrows * 5; i++)
        free(r.cells[i]);
    free(r.cells);
    fl_strbuf_close(&r.table);
    json_decref(r.planned);
    json_decref(r.out);
    fl_interp_free(r.ip);
    fl_client_free(r.mc);
    fl_client_free(r.cp);
    return rc;
}
