/* release_cmd.c - `flotilla ctl release`: stop managing what a template delivered, and leave
 * it running in the members exactly as it is ("interrupt member resource management",
 * docs/migration.md).
 *
 *   flotilla ctl release KIND/NAME [-n NS] [--policy] [--wait] [--timeout DURATION]
 *
 * Sets migration.flotilla.io/release: "true" on the template's ResourceBinding (with
 * --policy: on the policy that claims the template, which releases every template it selects)
 * and on the attached bindings of its dependencies, which would otherwise be deleted, and
 * their member copies with them, once the workload's template goes. The binding controller
 * copies the mark onto the Works; the executor then takes Flotilla's labels and annotations
 * off the member objects, applies nothing more, and reports Applied=False reason Released.
 * After that, deleting the template and its policy leaves the member objects in place.
 * --wait returns once every Work of those bindings says Released (bounded by --timeout,
 * default 60s). Exit codes: 0 done, 1 failure (one line on stderr), 2 usage. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "cli/kind_resolve.h"
#include "cli/promote_cmd.h"
#include "client/client.h"
#include "controllers/names.h"
#include "core/condition.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/wellknown.h"

#define VERB "release"
#define POLL_MS 200

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};
static const fl_gvr PPS = {"policy.karmada.io/v1alpha1", "propagationpolicies"};
static const fl_gvr CPPS = {"policy.karmada.io/v1alpha1", "clusterpropagationpolicies"};
static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};

typedef struct opts {
    const char *kubeconfig, *context, *ns, *timeout, *ref;
    bool policy, wait;
} opts;

static void usage(void)
{
    printf("Usage: flotilla ctl release KIND/NAME [-n NS] [--policy] [--wait] [--timeout DURATION]\n"
           "\n"
           "Stop managing the member objects of a template and leave them running as they are: Flotilla\n"
           "takes its labels and annotations off them and applies nothing more; deleting the template and\n"
           "its policy afterwards leaves them in place. Marks the template's ResourceBinding (and the\n"
           "bindings of its dependencies) with " FL_RELEASE_ANNOTATION "=true.\n"
           "\n"
           "Options:\n"
           "  -n, --namespace NS  the template's namespace (default: default)\n"
           "  --policy            mark the template's policy instead: every template it selects is released\n"
           "  --wait              return once every member says it was released\n"
           "  --timeout DURATION  how long --wait waits (default 60s)\n"
           "  --kubeconfig FILE   the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
           "  --context NAME      context in that kubeconfig\n");
}

static int parse(int argc, char **argv, opts *o, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(opts, kubeconfig)}, {"context", NULL, offsetof(opts, context)},
        {"namespace", "n", offsetof(opts, ns)},           {"timeout", NULL, offsetof(opts, timeout)},
    };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (!strcmp(a, "--policy") || !strcmp(a, "--wait")) {
            *(a[2] == 'p' ? &o->policy : &o->wait) = true;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            const char *why = fl_cli_take_flag(flags, sizeof flags / sizeof *flags, argc, argv, &i, o);
            if (why)
                return fl_ctl_out_usage(VERB, why, a);
            continue;
        }
        if (o->ref)
            return fl_ctl_out_usage(VERB, "unexpected argument \"%s\"", a);
        o->ref = a;
    }
    if (!o->ref || !strchr(o->ref, '/') || !strchr(o->ref, '/')[1] || o->ref[0] == '/')
        return fl_ctl_out_usage(VERB, "%s", "KIND/NAME of a template is required (for example: release deployment/web)");
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Put the release mark on one object. */
static int mark(fl_client *cp, const fl_gvr *g, const char *ns, const char *name, const char *what)
{
    static const char patch[] = "{\"metadata\":{\"annotations\":{\"" FL_RELEASE_ANNOTATION "\":\"true\"}}}";
    fl_client_error ce = {0};
    int rc = fl_client_patch(cp, g, ns, name, FL_PATCH_MERGE, patch, sizeof patch - 1, NULL, NULL, &ce);
    if (rc == FL_ENOTFOUND)
        return fl_ctl_out_fail(VERB, "%s \"%s\" not found%s%s", what, name, ns ? " in namespace " : "", ns ? ns : "");
    if (rc)
        return fl_ctl_out_fail(VERB, "marking %s %s: %s", what, name, fl_errmsg(ce.message, rc));
    printf("%s/%s released\n", what, name);
    return 0;
}

/* The attached bindings in ns whose requiredBy names binding bname: a new array of names. */
static json_t *attached_of(fl_client *cp, const char *ns, const char *bname)
{
    json_t *names = json_array();
    fl_list_result l = {0};
    if (fl_client_list_all(cp, &RBS, ns, NULL, NULL, &l, NULL))
        return names;
    size_t i, j;
    json_t *b, *req;
    json_array_foreach(l.items, i, b) {
        json_array_foreach(json_object_get(json_object_get(b, "spec"), "requiredBy"), j, req) {
            const char *n = fl_json_str(req, "name");
            if (n && !strcmp(n, bname)) {
                json_array_append_new(names, json_string(fl_json_meta(b, "name")));
                break;
            }
        }
    }
    fl_list_result_close(&l);
    return names;
}

/* Has every Work of binding b (in ns; NULL: cluster-scoped) said Released? *pending: how many not. */
static bool all_released(fl_client *cp, const json_t *b, bool cluster_scoped, int *pending)
{
    const char *key = cluster_scoped ? FL_CRB_ID_LABEL : FL_RB_ID_LABEL;
    const char *id = fl_json_meta_map(b, "labels", key);
    *pending = 0;
    if (!id)
        return false;
    char *sel = fl_asprintf("%s=%s", key, id);
    fl_list_result l = {0};
    int rc = fl_client_list_all(cp, &WORKS, NULL, &(fl_list_opts){.label_selector = sel}, NULL, &l, NULL);
    free(sel);
    if (rc)
        return false;
    size_t i;
    json_t *w;
    json_array_foreach(l.items, i, w) {
        const json_t *c = fl_condition_of(w, "Applied");
        const char *reason = fl_json_str(c, "reason");
        if (!fl_json_meta_map(w, "annotations", FL_RELEASE_ANNOTATION) || !reason || strcmp(reason, "Released"))
            (*pending)++;
    }
    size_t n = json_array_size(l.items);
    fl_list_result_close(&l);
    return n > 0 && *pending == 0;
}

/* --wait: every binding in names (ns) until its Works say Released. */
static int wait_released(fl_client *cp, const char *ns, bool cluster_scoped, const json_t *names, int64_t timeout_ms)
{
    int64_t start = now_ms();
    for (;;) {
        int left = 0;
        size_t i;
        json_t *n;
        json_array_foreach(names, i, n) {
            json_t *b = NULL;
            int pending = 0;
            if (fl_client_get(cp, cluster_scoped ? &CRBS : &RBS, ns, json_string_value(n), &b, NULL) == 0 &&
                !all_released(cp, b, cluster_scoped, &pending))
                left += pending ? pending : 1;
            json_decref(b);
        }
        if (!left) {
            printf("released in every cluster in %.3fs\n", (double)(now_ms() - start) / 1000);
            return 0;
        }
        if (now_ms() - start >= timeout_ms)
            return fl_ctl_out_fail(VERB, "timed out after %.1fs: %d Work%s not released yet", (double)timeout_ms / 1000,
                                   left, left == 1 ? "" : "s");
        nanosleep(&(struct timespec){.tv_nsec = POLL_MS * 1000000L}, NULL);
    }
}

int fl_ctl_release(int argc, char **argv)
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
    int64_t timeout_ms = 60000;
    if (o.timeout) {
        timeout_ms = fl_cli_duration_ms(o.timeout);
        if (timeout_ms < 0)
            return fl_ctl_out_usage(VERB, "--timeout %s: expected a duration such as 500ms, 30s or 2m", o.timeout);
    }
    fl_client *cp = NULL;
    if (fl_cli_control_plane(o.kubeconfig, o.context, VERB, &cp))
        return 1;
    char *typed = fl_strndup(o.ref, (size_t)(strchr(o.ref, '/') - o.ref));
    const char *name = strchr(o.ref, '/') + 1;
    fl_cli_kind k;
    json_t *tmpl = NULL, *names = json_array();
    rc = fl_cli_kind_resolve(cp, typed, VERB, &k);
    if (rc)
        goto out;
    const char *ns = k.namespaced ? (o.ns ? o.ns : "default") : NULL;
    fl_client_error ce = {0};
    rc = fl_client_get(cp, &(fl_gvr){k.api_version, k.resource}, ns, name, &tmpl, &ce);
    if (rc) {
        rc = rc == FL_ENOTFOUND ? fl_ctl_out_fail(VERB, "%s \"%s\" not found on the control plane%s%s", k.resource, name,
                                                  ns ? " in namespace " : "", ns ? ns : "")
                                : fl_ctl_out_fail(VERB, "reading %s %s: %s", k.resource, name, fl_errmsg(ce.message, rc));
        goto out;
    }
    char *bname = fl_names_binding(k.kind, name);
    if (o.policy) {
        const char *pn = fl_json_meta_map(tmpl, "annotations", k.namespaced ? FL_PP_NAME_ANNOTATION : FL_CPP_NAME_ANNOTATION);
        if (!pn && k.namespaced && (pn = fl_json_meta_map(tmpl, "annotations", FL_CPP_NAME_ANNOTATION)) != NULL)
            rc = mark(cp, &CPPS, NULL, pn, "clusterpropagationpolicy");
        else if (!pn)
            rc = fl_ctl_out_fail(VERB, "%s/%s is not claimed by a policy: nothing to release", k.resource, name);
        else
            rc = mark(cp, k.namespaced ? &PPS : &CPPS, ns, pn, k.namespaced ? "propagationpolicy" : "clusterpropagationpolicy");
    } else {
        rc = mark(cp, k.namespaced ? &RBS : &CRBS, ns, bname, k.namespaced ? "resourcebinding" : "clusterresourcebinding");
    }
    json_array_append_new(names, json_string(bname));
    if (rc == 0 && k.namespaced) {
        json_t *att = attached_of(cp, ns, bname);
        size_t i;
        json_t *n;
        json_array_foreach(att, i, n) {
            if (rc == 0)
                rc = mark(cp, &RBS, ns, json_string_value(n), "resourcebinding");
            json_array_append(names, n);
        }
        json_decref(att);
    }
    free(bname);
    fflush(stdout);
    if (rc == 0 && o.wait)
        rc = wait_released(cp, ns, !k.namespaced, names, timeout_ms);
out:
    json_decref(names);
    json_decref(tmpl);
    fl_cli_kind_close(&k);
    free(typed);
    fl_client_free(cp);
    return rc;
}
