/* status_cmd.c - `flotilla ctl status`: is it live everywhere, and if not, where and why?
 *
 *   flotilla ctl status [KIND[/NAME]] [-n NS | -A] [-o yaml|json] [--cluster NAME] [--state STATE]
 *                       [--watch] [--wait] [--timeout DURATION] [--kubeconfig F] [--context C]
 *
 * The table has a row per binding, that is per propagated template, read from the binding's
 * status.summary, which the binding status controller keeps bounded whatever the fleet's size
 * (controllers/summary.h): its state, how many target clusters are Current out of how many,
 * as a number and a bar, the counts of the states that need attention, when it last changed,
 * and the first clusters that are not Current with why. KIND is typed as kubectl takes it and
 * resolved by discovery (kind_resolve.h); NAME picks one template, whose binding has the name
 * fl_names_binding gives it. Without -A it reads the ResourceBindings of one namespace; -A reads
 * every namespace's and the ClusterResourceBindings too.
 *
 * The summary names at most 20 clusters. --cluster and --state need every one, so they read the
 * binding's Works instead (labelled with its permanent id, in the clusters' execution spaces),
 * page by page, keeping only the rows that match: each cluster's state is the one the summary
 * counts (fl_summary_cluster_state, from the Work's Applied condition and its manifests'
 * liveStatus, and the Cluster's Ready condition).
 *
 * --watch and --wait keep informers on the bindings: --watch prints the table, then a row per
 * binding whose row changed (as `kubectl get -w` does); --wait returns once every selected
 * binding is Current, or at --timeout with one line naming what is not. SIGINT and SIGTERM end
 * both: --watch exits 0 then.
 *
 * Exit codes, as kubectl get and kpt live status (which report whatever the state is, and
 * leave waiting to kubectl wait and kpt's --poll-until): 0 the status was read; with --wait,
 * 0 once everything selected is Current, 1 at the timeout; 1 failure; 2 usage. */
#include "cli/status_cmd.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "cli/kind_resolve.h"
#include "client/client.h"
#include "client/informer.h"
#include "controllers/names.h"
#include "controllers/summary.h"
#include "core/condition.h"
#include "core/err.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/timefmt.h"
#include "core/wellknown.h"

#define VERB "status"
#define SHOWN_NOT_CURRENT 3 /* clusters named in a row, before " + N more..." */
#define BAR_WIDTH 10
#define LIST_PAGE 500 /* items a page of a list, as kubectl's --chunk-size */
#define DEFAULT_WAIT_MS 60000
#define SYNC_WAIT_MS 30000 /* the informers' first lists, when no --timeout says otherwise */
#define WHY_SHOWN 3        /* bindings named in --wait's timeout line */

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};
static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};
static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

/* what a binding is read without: the per-cluster items the summary stands for */
static const char *const BINDING_SKIP[] = {"metadata.managedFields", "status.aggregatedStatus", NULL};
/* what a Work is read without: its manifests */
static const char *const WORK_SKIP[] = {"metadata.managedFields", "spec.workload", NULL};
/* what a Cluster is read without: all but its conditions */
static const char *const CLUSTER_SKIP[] = {"metadata.managedFields", "spec", "status.apiEnablements",
                                           "status.resourceSummary", "status.nodeSummary", NULL};

const char *const fl_status_headers[FL_STATUS_NCOLS] = {
    "NAMESPACE", "NAME", "STATE", "CURRENT", "PROGRESS", "FAILED", "IN-PROGRESS", "UNKNOWN", "AGE", "NOT CURRENT"};

typedef struct opts {
    const char *kubeconfig, *context, *ns, *output, *cluster, *state, *timeout, *chunk;
    bool all, watch, wait;
    int64_t page; /* --chunk-size */
    char *kind;       /* KIND as typed (heap), or NULL */
    const char *name; /* NAME, or NULL */
    int64_t timeout_ms;
} opts;

/* What the command reads. */
typedef struct sel {
    fl_cli_kind kind; /* zeroed when no KIND was given */
    char *fields;     /* a fieldSelector for NAME's binding, or NULL */
    bool rbs, crbs;   /* which bindings */
    const char *ns;   /* the ResourceBindings' namespace; NULL: all */
} sel;

/* ---- output ---- */

static void usage(void)
{
    printf("Usage: flotilla ctl status [KIND[/NAME]] [options]\n"
           "\n"
           "Is it live everywhere, and if not, where and why? One row per propagated template, from\n"
           "its binding's status.summary: the state over its clusters (Current, InProgress, Failed,\n"
           "Terminating, NotFound, Unknown), how many clusters are Current, the counts that need\n"
           "attention, and the first clusters that are not Current with the reason (docs/status.md).\n"
           "\n"
           "KIND is the template's kind as kubectl takes it: Deployment, deployments, deploy,\n"
           "deployments.apps.\n"
           "\n"
           "Options:\n"
           "  -n, --namespace NS     the templates' namespace (default: default)\n"
           "  -A, --all-namespaces   every namespace, and cluster-scoped templates\n"
           "  -o, --output FMT       yaml or json: the summaries as a List\n"
           "  --cluster NAME         each binding's state on that cluster, with the reason and message\n"
           "  --state STATE          only the clusters in that state (every cluster, not just the 20\n"
           "                         the summary names)\n"
           "  -w, --watch            print the table, then a row for each binding that changes\n"
           "                         (Ctrl-C ends it)\n"
           "  --wait                 return once everything selected is Current; exit 1 at --timeout\n"
           "  --timeout DURATION     how long --wait (default 60s) or --watch (default: until stopped)\n"
           "                         runs: 500ms, 30s, 2m, 1m30s\n"
           "  --chunk-size N         items per page of each list (default 500)\n"
           "  --kubeconfig FILE      the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
           "  --context NAME         context in that kubeconfig\n"
           "\n"
           "Exit status: 0 when the status was read, whatever it says (as kubectl get); with --wait,\n"
           "0 once everything selected is Current and 1 at the timeout; 1 on failure; 2 on bad usage.\n");
}

/* The table on f (ctl_out.h says how it is laid out). */
static void print_rows(FILE *f, const char *const *hdr, size_t ncols, char *const *cells, size_t nrows,
                       const bool *hide, size_t *width)
{
    fl_strbuf b = FL_STRBUF_INIT;
    fl_ctl_out_table(&b, hdr, ncols, cells, nrows, hide, width);
    if (b.len)
        fputs(b.p, f);
    fl_strbuf_close(&b);
}

static void print_doc(const char *output, const json_t *items)
{
    json_t *doc = json_pack("{s:s, s:s, s:{s:s}, s:O}", "apiVersion", "v1", "kind", "List", "metadata",
                            "resourceVersion", "", "items", items);
    fl_ctl_out_doc(output, doc);
    json_decref(doc);
}

/* ---- a binding's row ---- */

void fl_status_age(int64_t ms, char out[32])
{
    if (ms < -1000) {
        snprintf(out, 32, "<invalid>");
        return;
    }
    long long s = ms < 0 ? 0 : ms / 1000, m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120)
        snprintf(out, 32, "%llds", s);
    else if (m < 10)
        snprintf(out, 32, s % 60 ? "%lldm%llds" : "%lldm", m, s % 60);
    else if (m < 180)
        snprintf(out, 32, "%lldm", m);
    else if (h < 8)
        snprintf(out, 32, m % 60 ? "%lldh%lldm" : "%lldh", h, m % 60);
    else if (h < 48)
        snprintf(out, 32, "%lldh", h);
    else if (h < 24 * 8)
        snprintf(out, 32, h % 24 ? "%lldd%lldh" : "%lldd", d, h % 24);
    else if (d < 365 * 2)
        snprintf(out, 32, "%lldd", d);
    else if (d < 365 * 8)
        snprintf(out, 32, d % 365 ? "%lldy%lldd" : "%lldy", d / 365, d % 365);
    else
        snprintf(out, 32, "%lldy", d / 365);
}

/* "deployment/web" for a binding's spec.resource: the template's kind, lowercased, and name;
 * the binding's name (bname) without them. */
static char *template_ref(const json_t *res, const char *bname)
{
    const char *kind = fl_json_str(res, "kind"), *name = fl_json_str(res, "name");
    if (!kind || !name)
        return fl_strdup(bname ? bname : "<unknown>");
    char *s = fl_asprintf("%s/%s", kind, name);
    for (char *p = s; *p && *p != '/'; p++)
        *p = (char)tolower((unsigned char)*p);
    return s;
}

static json_int_t count(const json_t *sum, const char *key)
{
    const json_t *v = json_object_get(sum, key);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* "member2 Failed (ProgressDeadlineExceeded), member3 InProgress + 4 more..." */
static char *not_current(const json_t *sum)
{
    const json_t *nc = json_object_get(sum, "notCurrent");
    json_int_t missing = count(sum, "desired") - count(sum, "current");
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i, shown = 0;
    json_t *e;
    json_array_foreach(nc, i, e) {
        if (shown == SHOWN_NOT_CURRENT)
            break;
        const char *cl = fl_json_str(e, "cluster"), *st = fl_json_str(e, "state"), *why = fl_json_str(e, "reason");
        if (!cl)
            continue;
        fl_strbuf_printf(&b, "%s%s %s", shown ? ", " : "", cl, st ? st : "Unknown");
        if (why && *why)
            fl_strbuf_printf(&b, " (%s)", why);
        shown++;
    }
    if (missing > (json_int_t)shown)
        fl_strbuf_printf(&b, "%s+ %lld more...", shown ? " " : "", (long long)(missing - (json_int_t)shown));
    if (!b.len)
        fl_strbuf_adds(&b, "<none>");
    return fl_strbuf_take(&b);
}

bool fl_status_row(const json_t *b, int64_t now_ms, char *cells[FL_STATUS_NCOLS])
{
    const json_t *sum = fl_json_path(b, "status.summary");
    const char *ns = fl_json_meta(b, "namespace");
    cells[FL_STATUS_NAMESPACE] = fl_strdup(ns ? ns : "");
    cells[FL_STATUS_NAME] = template_ref(fl_json_path(b, "spec.resource"), fl_json_meta(b, "name"));
    json_int_t desired, current;
    const char *state, *since;
    if (json_is_object(sum)) {
        state = fl_json_str(sum, "state") ? fl_json_str(sum, "state") : "Unknown";
        desired = count(sum, "desired");
        current = count(sum, "current");
        since = fl_json_str(sum, "lastChangeTime");
        cells[FL_STATUS_NOT_CURRENT] = not_current(sum);
    } else {
        state = "Unknown";
        desired = (json_int_t)json_array_size(fl_json_path(b, "spec.clusters"));
        current = 0;
        since = NULL;
        cells[FL_STATUS_NOT_CURRENT] = fl_strdup("<no status.summary yet>");
    }
    if (!since)
        since = fl_json_meta(b, "creationTimestamp");
    cells[FL_STATUS_STATE] = fl_strdup(state);
    cells[FL_STATUS_CURRENT] = fl_asprintf("%lld/%lld", (long long)current, (long long)desired);
    char bar[BAR_WIDTH + 3];
    int fill = desired > 0 ? (int)(current * BAR_WIDTH / desired) : 0;
    if (fill > BAR_WIDTH)
        fill = BAR_WIDTH;
    bar[0] = '[';
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[1 + i] = i < fill ? '#' : '.';
    bar[BAR_WIDTH + 1] = ']';
    bar[BAR_WIDTH + 2] = '\0';
    cells[FL_STATUS_PROGRESS] = fl_strdup(bar);
    cells[FL_STATUS_FAILED] = fl_asprintf("%lld", (long long)count(sum, "failed"));
    cells[FL_STATUS_IN_PROGRESS] = fl_asprintf("%lld", (long long)count(sum, "inProgress"));
    cells[FL_STATUS_UNKNOWN] = fl_asprintf("%lld", (long long)count(sum, "unknown"));
    int64_t t = fl_time_parse(since);
    char age[32];
    if (t < 0)
        snprintf(age, sizeof age, "<unknown>");
    else
        fl_status_age(now_ms - t, age);
    cells[FL_STATUS_AGE] = fl_strdup(age);
    return !strcmp(state, "Current");
}

static void free_cells(char **cells, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(cells[i]);
}

/* The table of bindings (an array, only read), header first. */
static void print_bindings(const opts *o, const json_t *bindings, size_t *width)
{
    size_t n = json_array_size(bindings);
    char **cells = fl_calloc(n ? n * FL_STATUS_NCOLS : 1, sizeof *cells);
    int64_t now = fl_time_now_ms();
    for (size_t i = 0; i < n; i++)
        fl_status_row(json_array_get(bindings, i), now, cells + i * FL_STATUS_NCOLS);
    bool hide[FL_STATUS_NCOLS] = {[FL_STATUS_NAMESPACE] = !o->all};
    print_rows(stdout, fl_status_headers, FL_STATUS_NCOLS, cells, n, hide, width);
    free_cells(cells, n * FL_STATUS_NCOLS);
    free(cells);
}

/* A binding as -o prints it: its names, its template and its summary. */
static json_t *summary_item(const json_t *b)
{
    json_t *md = json_object();
    static const char *const keep[] = {"name", "namespace", "creationTimestamp", NULL};
    for (int i = 0; keep[i]; i++)
        if (fl_json_meta(b, keep[i]))
            json_object_set_new(md, keep[i], json_string(fl_json_meta(b, keep[i])));
    const char *av = fl_json_str(b, "apiVersion"), *kind = fl_json_str(b, "kind");
    json_t *it = json_pack("{s:s, s:s, s:o}", "apiVersion", av ? av : "", "kind", kind ? kind : "", "metadata", md);
    const json_t *res = fl_json_path(b, "spec.resource"), *sum = fl_json_path(b, "status.summary");
    if (res)
        json_object_set_new(it, "spec", json_pack("{s:O}", "resource", res));
    if (sum)
        json_object_set_new(it, "status", json_pack("{s:O}", "summary", sum));
    return it;
}

/* The bindings (an array, only read) as -o asks, a List of their summary items, or as the
 * table when there are any. */
static void print_summaries(const opts *o, const json_t *bindings)
{
    if (o->output) {
        json_t *items = json_array();
        size_t i;
        json_t *b;
        json_array_foreach(bindings, i, b) json_array_append_new(items, summary_item(b));
        print_doc(o->output, items);
        json_decref(items);
    } else if (json_array_size(bindings)) {
        size_t width[FL_STATUS_NCOLS] = {0};
        print_bindings(o, bindings, width);
    }
}

/* ---- what is selected ---- */

static size_t group_len(const char *api_version)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    return slash ? (size_t)(slash - api_version) : 0;
}

/* Is binding b's template of the selected kind (and name)? */
static bool selected(const opts *o, const sel *s, const json_t *b)
{
    const json_t *res = fl_json_path(b, "spec.resource");
    if (s->kind.kind) {
        const char *kind = fl_json_str(res, "kind"), *av = fl_json_str(res, "apiVersion");
        size_t g = group_len(av);
        if (!kind || strcmp(kind, s->kind.kind) || g != group_len(s->kind.api_version) ||
            (g && strncmp(av, s->kind.api_version, g)))
            return false;
    }
    return !o->name || (fl_json_str(res, "name") && !strcmp(fl_json_str(res, "name"), o->name));
}

/* The selected bindings, ResourceBindings first, each resource in its list's order: a new
 * array in *out. 0, or 1 after printing why not. */
static int list_bindings(fl_client *cp, const opts *o, const sel *s, json_t **out)
{
    *out = json_array();
    for (int k = 0; k < 2; k++) {
        if (!(k ? s->crbs : s->rbs))
            continue;
        fl_list_opts lo = {.field_selector = s->fields, .limit = o->page, .skip_fields = BINDING_SKIP};
        fl_list_result lr;
        fl_client_error ce = {0};
        int rc = fl_client_list_all(cp, k ? &CRBS : &RBS, k ? NULL : s->ns, &lo, NULL, &lr, &ce);
        if (rc)
            return fl_ctl_out_fail(VERB, "listing %s: %s", k ? "ClusterResourceBindings" : "ResourceBindings",
                        fl_errmsg(ce.message, rc));
        size_t i;
        json_t *b;
        json_array_foreach(lr.items, i, b) if (selected(o, s, b)) json_array_append(*out, b);
        fl_list_result_close(&lr);
    }
    return 0;
}

/* Nothing selected: kubectl's line for an empty list, or for NAME why it has no binding. */
static int none_found(fl_client *cp, const opts *o, const sel *s)
{
    if (!o->name) {
        if (s->ns)
            fprintf(stderr, "No resources found in %s namespace.\n", s->ns);
        else
            fprintf(stderr, "No resources found\n");
        return 0;
    }
    const char *ns = s->kind.namespaced ? s->ns : NULL;
    if (s->kind.namespaced && !ns)
        return fl_ctl_out_fail(VERB, "no binding for %s \"%s\" in any namespace: no propagation policy has claimed it", s->kind.kind,
                    o->name);
    json_t *tmpl = NULL;
    fl_client_error ce = {0};
    int e = fl_client_get(cp, &(fl_gvr){s->kind.api_version, s->kind.resource}, ns, o->name, &tmpl, &ce);
    json_decref(tmpl);
    if (e == FL_ENOTFOUND)
        return fl_ctl_out_fail(VERB, "%s \"%s\" not found%s%s", s->kind.kind, o->name, ns ? " in namespace " : "", ns ? ns : "");
    if (e)
        return fl_ctl_out_fail(VERB, "%s \"%s\": %s", s->kind.kind, o->name, fl_errmsg(ce.message, e));
    char *bname = fl_names_binding(s->kind.kind, o->name);
    fl_ctl_out_fail(VERB, "%s \"%s\" has no %s \"%s\": no propagation policy has claimed it", s->kind.kind, o->name,
         ns ? "ResourceBinding" : "ClusterResourceBinding", bname);
    free(bname);
    return 1;
}

/* ---- drill-down: every cluster of a binding, from its Works ---- */

typedef struct drill {
    const opts *o;
    const json_t *binding;
    json_t *targets; /* cluster -> true: where the binding is to be */
    json_t *seen;    /* cluster -> true: a Work was listed there */
    json_t *reports; /* cluster -> its enum fl_cluster_report */
    json_t *recs;    /* the binding's records so far */
} drill;

/* The binding's target clusters, as the summary counts them: spec.clusters, then the
 * clusters of spec.requiredBy (an attached dependency's). */
static json_t *targets_of(const json_t *b, const char *only)
{
    json_t *t = json_object();
    const json_t *spec = json_object_get(b, "spec");
    size_t i, j;
    json_t *c, *e;
    json_array_foreach(json_object_get(spec, "clusters"), i, c) if (fl_json_str(c, "name"))
        json_object_set_new(t, fl_json_str(c, "name"), json_true());
    json_array_foreach(json_object_get(spec, "requiredBy"), i, e) {
        json_array_foreach(json_object_get(e, "clusters"), j, c) if (fl_json_str(c, "name"))
            json_object_set_new(t, fl_json_str(c, "name"), json_true());
    }
    if (only) { /* --cluster: that one, if it is a target */
        bool is = json_object_get(t, only) != NULL;
        json_object_clear(t);
        if (is)
            json_object_set_new(t, only, json_true());
    }
    return t;
}

static void add_record(drill *d, const char *cluster, const json_t *work)
{
    const char *reason, *message;
    const char *state =
        fl_summary_cluster_state(work, json_is_integer(json_object_get(d->reports, cluster))
                                           ? (enum fl_cluster_report)json_integer_value(json_object_get(d->reports, cluster))
                                           : FL_CLUSTER_NOT_READY,
                                 &reason, &message);
    if (d->o->state && strcmp(state, d->o->state))
        return;
    const json_t *b = d->binding;
    const char *av = fl_json_str(b, "apiVersion"), *kind = fl_json_str(b, "kind"), *name = fl_json_meta(b, "name");
    json_t *ref = json_pack("{s:s, s:s, s:s}", "apiVersion", av ? av : "", "kind", kind ? kind : "", "name",
                            name ? name : "");
    if (fl_json_meta(b, "namespace"))
        json_object_set_new(ref, "namespace", json_string(fl_json_meta(b, "namespace")));
    json_t *r = json_pack("{s:o, s:s, s:s, s:s, s:s}", "binding", ref, "cluster", cluster, "state", state, "reason",
                          reason, "message", message);
    const json_t *res = fl_json_path(b, "spec.resource");
    if (res)
        json_object_set(r, "resource", (json_t *)res);
    json_array_append_new(d->recs, r);
}

/* fl_list_opts.on_page: a page of the binding's Works. */
static void work_page(void *ctx, json_t *items, fl_blob *const *texts)
{
    (void)texts;
    drill *d = ctx;
    if (!items) { /* the snapshot expired: one unpaged list follows, from the start */
        json_array_clear(d->recs);
        json_object_clear(d->seen);
        return;
    }
    size_t i;
    json_t *w;
    json_array_foreach(items, i, w) {
        const char *ns = fl_json_meta(w, "namespace");
        size_t pl = strlen(FL_EXECUTION_SPACE_PREFIX);
        if (!ns || strncmp(ns, FL_EXECUTION_SPACE_PREFIX, pl))
            continue;
        const char *cluster = ns + pl;
        if (!json_object_get(d->targets, cluster) || json_object_get(d->seen, cluster))
            continue; /* a Work left where the binding no longer is: not counted, as in the summary */
        json_object_set_new(d->seen, cluster, json_true());
        add_record(d, cluster, w);
    }
}

static int by_cluster(const void *a, const void *b)
{
    return strcmp(fl_json_str(*(json_t *const *)a, "cluster"), fl_json_str(*(json_t *const *)b, "cluster"));
}

/* Binding b's records into out, by cluster name. 0, or 1 after printing why not. */
static int drill_binding(fl_client *cp, const opts *o, const json_t *b, json_t *reports, json_t *out)
{
    bool crb = !fl_json_meta(b, "namespace");
    const char *id = fl_json_meta_map(b, "labels", crb ? FL_CRB_ID_LABEL : FL_RB_ID_LABEL);
    drill d = {.o = o, .binding = b, .targets = targets_of(b, o->cluster), .seen = json_object(), .reports = reports,
               .recs = json_array()};
    int rc = 0;
    if (json_object_size(d.targets) && id) {
        char *labels = fl_asprintf("%s=%s", crb ? FL_CRB_ID_LABEL : FL_RB_ID_LABEL, id);
        char *ns = o->cluster ? fl_names_execution_space(o->cluster) : NULL;
        /* the states a Work's own status.liveState gives as the summary would (its cluster Ready,
         * itself not deleting: checked again below) are selected by the server */
        char *fields = o->state && (!strcmp(o->state, "Current") || !strcmp(o->state, "Failed") ||
                                    !strcmp(o->state, "NotFound"))
                           ? fl_asprintf("status.liveState=%s", o->state)
                           : NULL;
        fl_list_opts lo = {.label_selector = labels, .field_selector = fields, .limit = o->page,
                           .skip_fields = WORK_SKIP, .on_page = work_page, .page_ctx = &d, .take_pages = true};
        fl_list_result lr;
        fl_client_error ce = {0};
        int e = fl_client_list_all(cp, &WORKS, ns, &lo, NULL, &lr, &ce);
        if (e == FL_EINVAL && fields) { /* a server that cannot select on it: every Work, filtered here */
            work_page(&d, NULL, NULL);
            lo.field_selector = NULL;
            e = fl_client_list_all(cp, &WORKS, ns, &lo, NULL, &lr, &ce);
        }
        free(fields);
        if (e)
            rc = fl_ctl_out_fail(VERB, "listing the Works of %s: %s", fl_json_meta(b, "name"), fl_errmsg(ce.message, e));
        else
            fl_list_result_close(&lr);
        free(labels);
        free(ns);
    }
    /* targets with no Work yet */
    const char *cluster;
    json_t *v;
    json_object_foreach(d.targets, cluster, v) if (!json_object_get(d.seen, cluster)) add_record(&d, cluster, NULL);
    size_t n = json_array_size(d.recs);
    json_t **v2 = fl_calloc(n ? n : 1, sizeof *v2);
    for (size_t i = 0; i < n; i++)
        v2[i] = json_array_get(d.recs, i);
    qsort(v2, n, sizeof *v2, by_cluster);
    for (size_t i = 0; i < n && !rc; i++)
        json_array_append(out, v2[i]);
    free(v2);
    json_decref(d.targets);
    json_decref(d.seen);
    json_decref(d.recs);
    return rc;
}

/* cluster -> how it reports (fl_cluster_report), for --cluster's one or for all: a new object in *out. 0, or 1 after
 * printing why not. */
static int cluster_reports(fl_client *cp, const opts *o, json_t **out)
{
    *out = json_object();
    fl_client_error ce = {0};
    if (o->cluster) {
        json_t *cl = NULL;
        int e = fl_client_get(cp, &CLUSTERS, NULL, o->cluster, &cl, &ce);
        if (e == FL_ENOTFOUND)
            return fl_ctl_out_fail(VERB, "cluster \"%s\" not found", o->cluster);
        if (e)
            return fl_ctl_out_fail(VERB, "reading cluster %s: %s", o->cluster, fl_errmsg(ce.message, e));
        json_object_set_new(*out, o->cluster, json_integer(fl_cluster_report(cl)));
        json_decref(cl);
        return 0;
    }
    fl_list_opts lo = {.limit = o->page, .skip_fields = CLUSTER_SKIP};
    fl_list_result lr;
    int e = fl_client_list_all(cp, &CLUSTERS, NULL, &lo, NULL, &lr, &ce);
    if (e)
        return fl_ctl_out_fail(VERB, "listing clusters: %s", fl_errmsg(ce.message, e));
    size_t i;
    json_t *cl;
    json_array_foreach(lr.items, i, cl) if (fl_json_meta(cl, "name"))
        json_object_set_new(*out, fl_json_meta(cl, "name"), json_integer(fl_cluster_report(cl)));
    fl_list_result_close(&lr);
    return 0;
}

enum { D_NS, D_NAME, D_CLUSTER, D_STATE, D_REASON, D_MESSAGE, D_NCOLS };
static const char *const D_HEADERS[D_NCOLS] = {"NAMESPACE", "NAME", "CLUSTER", "STATE", "REASON", "MESSAGE"};

/* The drill-down's table (or -o) of bindings; reports from cluster_reports(). */
static int run_drill(fl_client *cp, const opts *o, const json_t *bindings, json_t *reports)
{
    json_t *recs = json_array();
    int rc = 0;
    size_t i;
    json_t *b;
    json_array_foreach(bindings, i, b) {
        if (rc)
            break;
        rc = drill_binding(cp, o, b, reports, recs);
    }
    if (!rc && o->output) {
        print_doc(o->output, recs);
    } else if (!rc && !json_array_size(recs)) {
        fprintf(stderr, "No clusters%s%s%s%s of the %zu binding%s selected.\n", o->state ? " in state " : "",
                o->state ? o->state : "", o->cluster ? " named " : "", o->cluster ? o->cluster : "",
                json_array_size(bindings), json_array_size(bindings) == 1 ? "" : "s");
    } else if (!rc) {
        size_t n = json_array_size(recs);
        char **cells = fl_calloc(n * D_NCOLS, sizeof *cells);
        json_t *r;
        json_array_foreach(recs, i, r) {
            char **row = cells + i * D_NCOLS;
            const json_t *ref = json_object_get(r, "binding");
            row[D_NS] = fl_strdup(fl_json_str(ref, "namespace") ? fl_json_str(ref, "namespace") : "");
            row[D_NAME] = template_ref(json_object_get(r, "resource"), fl_json_str(ref, "name"));
            row[D_CLUSTER] = fl_strdup(fl_json_str(r, "cluster"));
            row[D_STATE] = fl_strdup(fl_json_str(r, "state"));
            row[D_REASON] = fl_ctl_out_none(fl_json_str(r, "reason"));
            row[D_MESSAGE] = fl_ctl_out_none(fl_json_str(r, "message"));
        }
        bool hide[D_NCOLS] = {[D_NS] = !o->all};
        size_t width[D_NCOLS] = {0};
        print_rows(stdout, D_HEADERS, D_NCOLS, cells, n, hide, width);
        free_cells(cells, n * D_NCOLS);
        free(cells);
    }
    json_decref(recs);
    return rc;
}

/* ---- --watch and --wait ---- */

/* What the informers' handlers hand the main thread, and the signal thread's word. */
typedef struct live {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    json_t *queue;     /* [binding, deleted] per change told, in order */
    bool stop;         /* SIGINT or SIGTERM came */
    bool quit;         /* the command is done: the signal thread is only to end */
    sigset_t sigs;
} live;

static void told(live *l, json_t *obj, bool deleted)
{
    pthread_mutex_lock(&l->mu);
    json_array_append_new(l->queue, json_pack("[O, b]", obj, deleted));
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static void on_add(void *ctx, json_t *obj)
{
    told(ctx, obj, false);
}

static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)old_obj;
    told(ctx, new_obj, false);
}

static void on_delete(void *ctx, json_t *obj)
{
    told(ctx, obj, true);
}

/* The signal thread: the first SIGINT or SIGTERM stops the command. The command ends the
 * thread with a SIGTERM of its own (quit set). */
static void *signals_main(void *ctx)
{
    live *l = ctx;
    int sig = 0;
    sigwait(&l->sigs, &sig);
    pthread_mutex_lock(&l->mu);
    if (!l->quit)
        l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* The row as --watch compares it: every cell but the age. */
static char *row_key(char *const *cells)
{
    fl_strbuf b = FL_STRBUF_INIT;
    for (int c = 0; c < FL_STATUS_NCOLS; c++)
        if (c != FL_STATUS_AGE)
            fl_strbuf_printf(&b, "%s\t", cells[c]);
    return fl_strbuf_take(&b);
}

/* Note binding b's row in seen (key -> {row, current, why}); true when it is new or changed. */
static bool note(json_t *seen, const char *key, char *const *cells, bool current)
{
    char *rk = row_key(cells);
    const json_t *was = json_object_get(seen, key);
    bool changed = !was || strcmp(fl_json_str(was, "row"), rk);
    if (changed) {
        const char *ns = cells[FL_STATUS_NAMESPACE];
        char *why = fl_asprintf("%s%s%s is %s, %s Current: %s", cells[FL_STATUS_NAME], *ns ? " in " : "", ns,
                                cells[FL_STATUS_STATE], cells[FL_STATUS_CURRENT], cells[FL_STATUS_NOT_CURRENT]);
        json_object_set_new(seen, key, json_pack("{s:s, s:b, s:s}", "row", rk, "current", current, "why", why));
        free(why);
    }
    free(rk);
    return changed;
}

static bool all_current(const json_t *seen)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)seen, k, v) if (!json_is_true(json_object_get(v, "current"))) return false;
    return json_object_size(seen) > 0;
}

/* "a is Failed, 0/2 Current: ...; b ... + N more" for what is not Current. */
static char *not_current_line(const json_t *seen)
{
    fl_strbuf b = FL_STRBUF_INIT;
    size_t shown = 0, more = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)seen, k, v) {
        if (json_is_true(json_object_get(v, "current")))
            continue;
        if (shown == WHY_SHOWN) {
            more++;
            continue;
        }
        fl_strbuf_printf(&b, "%s%s", shown++ ? "; " : "", fl_json_str(v, "why"));
    }
    if (more)
        fl_strbuf_printf(&b, "; + %zu more...", more);
    if (!b.len)
        fl_strbuf_adds(&b, "no binding is selected yet");
    return fl_strbuf_take(&b);
}

/* Every selected binding the informers hold: a new array. */
static json_t *snapshot(const opts *o, const sel *s, fl_informer *const *inf)
{
    json_t *out = json_array();
    for (int k = 0; k < 2; k++) {
        if (!inf[k])
            continue;
        json_t *all = fl_informer_list(inf[k], NULL);
        size_t i;
        json_t *b;
        json_array_foreach(all, i, b) if (selected(o, s, b)) json_array_append(out, b);
        json_decref(all);
    }
    return out;
}

/* Apply a batch of changes: note each row, and print the changed ones when print is set. */
static void apply_batch(const opts *o, const sel *s, const json_t *batch, json_t *seen, bool print, size_t *width)
{
    size_t i;
    json_t *ev;
    int64_t now = fl_time_now_ms();
    bool hide[FL_STATUS_NCOLS] = {[FL_STATUS_NAMESPACE] = !o->all};
    json_array_foreach(batch, i, ev) {
        const json_t *b = json_array_get(ev, 0);
        char *key = fl_informer_key(b);
        if (!key || !selected(o, s, b)) {
            free(key);
            continue;
        }
        char *cells[FL_STATUS_NCOLS];
        bool current = fl_status_row(b, now, cells);
        bool show;
        if (json_is_true(json_array_get(ev, 1))) {
            show = json_object_get(seen, key) != NULL;
            json_object_del(seen, key);
        } else {
            show = note(seen, key, cells, current);
        }
        if (show && print)
            print_rows(stdout, NULL, FL_STATUS_NCOLS, cells, 1, hide, width);
        free_cells(cells, FL_STATUS_NCOLS);
        free(key);
    }
    fflush(stdout);
}

/* Start an informer on the selected bindings of one resource. */
static fl_informer *watch_bindings(fl_client *cp, const opts *o, const sel *s, bool crbs, live *l)
{
    fl_informer_config cfg = {
        .client = cp,
        .resource = crbs ? CRBS : RBS,
        .ns = crbs ? NULL : s->ns,
        .field_selector = s->fields,
        .page_size = o->page,
        .skip_fields = BINDING_SKIP,
        .silent_first_list = true,
        .no_old_objects = true,
        .handlers = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .ctx = l},
    };
    fl_informer *inf = NULL;
    fl_informer_new(&cfg, &inf);
    fl_informer_start(inf);
    return inf;
}

/* Until the informers have listed, a signal, or until (monotonic ms; 0: SYNC_WAIT_MS). */
static int wait_lists(live *l, fl_informer *const *inf, int64_t until)
{
    if (!until)
        until = fl_time_mono_ms() + SYNC_WAIT_MS;
    for (int k = 0; k < 2; k++) {
        while (inf[k] && !fl_informer_has_synced(inf[k])) {
            pthread_mutex_lock(&l->mu);
            bool stop = l->stop;
            pthread_mutex_unlock(&l->mu);
            if (stop)
                return FL_ECLOSED;
            if (fl_time_mono_ms() >= until)
                return FL_ETIMEDOUT;
            fl_informer_wait_synced(inf[k], 100);
        }
    }
    return 0;
}

/* The end of --wait (not under --watch): what it ended on, as the table or -o. */
static void print_final(const opts *o, const sel *s, fl_informer *const *inf)
{
    json_t *now = snapshot(o, s, inf);
    print_summaries(o, now);
    json_decref(now);
}

static int run_live(fl_client *cp, const opts *o, const sel *s, const sigset_t *sigs)
{
    live l = {.queue = json_array(), .sigs = *sigs};
    pthread_mutex_init(&l.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_t sig_thread;
    pthread_create(&sig_thread, NULL, signals_main, &l);

    bool timed = o->wait || o->timeout;
    int64_t deadline = fl_time_mono_ms() + o->timeout_ms;
    fl_informer *inf[2] = {s->rbs ? watch_bindings(cp, o, s, false, &l) : NULL,
                           s->crbs ? watch_bindings(cp, o, s, true, &l) : NULL};
    json_t *seen = json_object();
    size_t width[FL_STATUS_NCOLS] = {0};
    int rc = wait_lists(&l, inf, timed ? deadline : 0);
    bool done = false, stopped = rc == FL_ECLOSED;
    if (rc == FL_ETIMEDOUT) {
        rc = fl_ctl_out_fail(VERB, "the bindings could not be listed in %.1fs", (double)(timed ? o->timeout_ms : SYNC_WAIT_MS) / 1000);
        goto out;
    }
    /* what came before the first table is in it */
    pthread_mutex_lock(&l.mu);
    json_array_clear(l.queue);
    pthread_mutex_unlock(&l.mu);
    json_t *first = snapshot(o, s, inf);
    if (o->watch) {
        print_bindings(o, first, width);
        fflush(stdout);
    }
    json_t *as_batch = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(first, i, b) json_array_append_new(as_batch, json_pack("[O, b]", b, false));
    apply_batch(o, s, as_batch, seen, false, width); /* noted, not printed again */
    json_decref(as_batch);
    json_decref(first);

    while (!stopped) {
        if (o->wait && all_current(seen)) {
            done = true;
            break;
        }
        pthread_mutex_lock(&l.mu);
        int w = 0;
        while (!json_array_size(l.queue) && !l.stop && w != ETIMEDOUT) {
            if (timed) {
                int64_t left = deadline - fl_time_mono_ms();
                struct timespec ts = fl_time_after(CLOCK_MONOTONIC, left > 0 ? left : 0);
                w = pthread_cond_timedwait(&l.cv, &l.mu, &ts);
            } else {
                pthread_cond_wait(&l.cv, &l.mu);
            }
        }
        json_t *batch = l.queue;
        l.queue = json_array();
        stopped = l.stop;
        pthread_mutex_unlock(&l.mu);
        apply_batch(o, s, batch, seen, o->watch, width);
        json_decref(batch);
        if (o->wait && all_current(seen)) {
            done = true;
            break;
        }
        if (timed && fl_time_mono_ms() >= deadline)
            break;
    }
    rc = 0;
    if (o->wait && !o->watch)
        print_final(o, s, inf);
    if (o->wait && !done) {
        char *why = not_current_line(seen);
        rc = stopped ? fl_ctl_out_fail(VERB, "interrupted before everything selected was Current: %s", why)
                     : fl_ctl_out_fail(VERB, "timed out after %s waiting for everything selected to be Current: %s",
                            o->timeout ? o->timeout : "60s", why);
        free(why);
    }
out:
    for (int k = 0; k < 2; k++)
        fl_informer_free(inf[k]);
    pthread_mutex_lock(&l.mu);
    l.quit = true;
    pthread_mutex_unlock(&l.mu);
    pthread_kill(sig_thread, SIGTERM);
    pthread_join(sig_thread, NULL);
    pthread_cond_destroy(&l.cv);
    pthread_mutex_destroy(&l.mu);
    json_decref(l.queue);
    json_decref(seen);
    return rc;
}

/* ---- the command ---- */

static int parse(int argc, char **argv, opts *o, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(opts, kubeconfig)}, {"context", NULL, offsetof(opts, context)},
        {"namespace", "n", offsetof(opts, ns)},           {"output", "o", offsetof(opts, output)},
        {"cluster", NULL, offsetof(opts, cluster)},       {"state", NULL, offsetof(opts, state)},
        {"timeout", NULL, offsetof(opts, timeout)},       {"chunk-size", NULL, offsetof(opts, chunk)},
    };
    const char *pos[2] = {0};
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (!strcmp(a, "-A") || !strcmp(a, "--all-namespaces"))
            o->all = true;
        else if (!strcmp(a, "-w") || !strcmp(a, "--watch"))
            o->watch = true;
        else if (!strcmp(a, "--wait"))
            o->wait = true;
        else if (a[0] == '-' && a[1]) {
            const char *why = fl_cli_take_flag(flags, sizeof flags / sizeof *flags, argc, argv, &i, o);
            if (why)
                return fl_ctl_out_usage(VERB, why, a);
        } else if (npos == 1) {
            return fl_ctl_out_usage(VERB, "unexpected argument \"%s\": one KIND or KIND/NAME at most", a);
        } else {
            pos[npos++] = a;
        }
    }
    if (npos) {
        const char *slash = strchr(pos[0], '/');
        if (slash == pos[0] || (slash && (!slash[1] || strchr(slash + 1, '/'))))
            return fl_ctl_out_usage(VERB, "\"%s\" is not KIND or KIND/NAME (e.g. deployment/web)", pos[0]);
        o->kind = slash ? fl_strndup(pos[0], (size_t)(slash - pos[0])) : fl_strdup(pos[0]);
        o->name = slash ? slash + 1 : NULL;
    }
    if (o->ns && o->all)
        return fl_ctl_out_usage(VERB, "%s", "-n and -A (--all-namespaces) exclude each other");
    if (!o->ns)
        o->ns = "default";
    if (o->output && strcmp(o->output, "yaml") && strcmp(o->output, "json"))
        return fl_ctl_out_usage(VERB, "-o %s: expected yaml or json", o->output);
    if (o->state) {
        const char *canon = NULL;
        for (int k = 0; fl_summary_states[k]; k++)
            if (!strcasecmp(o->state, fl_summary_states[k]))
                canon = fl_summary_states[k];
        if (!canon)
            return fl_ctl_out_usage(VERB, "--state %s: expected Current, InProgress, Failed, Terminating, NotFound or Unknown",
                               o->state);
        o->state = canon;
    }
    if ((o->watch || o->wait) && (o->cluster || o->state))
        return fl_ctl_out_usage(VERB, "%s", "--watch and --wait follow the summaries: they take no --cluster or --state");
    if (o->watch && o->output)
        return fl_ctl_out_usage(VERB, "%s", "--watch prints the table: it takes no -o");
    if (o->timeout && !o->wait && !o->watch)
        return fl_ctl_out_usage(VERB, "--timeout %s is for --wait and --watch", o->timeout);
    o->page = LIST_PAGE;
    if (o->chunk) {
        char *end = NULL;
        long long v = strtoll(o->chunk, &end, 10);
        if (!isdigit((unsigned char)o->chunk[0]) || *end || v < 1 || v > 100000)
            return fl_ctl_out_usage(VERB, "--chunk-size %s: expected a number of items from 1 to 100000", o->chunk);
        o->page = v;
    }
    o->timeout_ms = DEFAULT_WAIT_MS;
    if (o->timeout && (o->timeout_ms = fl_cli_duration_ms(o->timeout)) < 0)
        return fl_ctl_out_usage(VERB, "--timeout %s: expected a duration such as 500ms, 30s, 2m or 1m30s", o->timeout);
    return 0;
}

/* The plain command: read once, print. */
static int run_once(fl_client *cp, const opts *o, const sel *s)
{
    json_t *bs = NULL, *reports = NULL;
    /* a cluster that is not there is an error whatever is selected */
    int rc = o->cluster || o->state ? cluster_reports(cp, o, &reports) : 0;
    if (rc == 0)
        rc = list_bindings(cp, o, s, &bs);
    if (rc == 0 && !json_array_size(bs)) {
        rc = none_found(cp, o, s);
    } else if (rc == 0 && (o->cluster || o->state)) {
        rc = run_drill(cp, o, bs, reports);
    } else if (rc == 0) {
        print_summaries(o, bs);
    }
    json_decref(bs);
    json_decref(reports);
    return rc;
}

int fl_ctl_status(int argc, char **argv)
{
    opts o = {0};
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help)
        usage();
    if (help || rc) {
        free(o.kind);
        return rc;
    }
    /* before any thread (the client's among them) starts: only the signal thread takes them */
    sigset_t sigs;
    sigemptyset(&sigs);
    if (o.watch || o.wait)
        fl_cli_block_signals(&sigs);
    fl_client *cp = NULL;
    if (fl_cli_control_plane(o.kubeconfig, o.context, VERB, &cp)) {
        free(o.kind);
        return 1;
    }
    sel s = {0};
    if (o.kind && fl_cli_kind_resolve(cp, o.kind, VERB, &s.kind)) {
        rc = 1;
        goto out;
    }
    s.rbs = !o.kind || s.kind.namespaced;
    s.crbs = o.kind ? !s.kind.namespaced : o.all;
    s.ns = o.all ? NULL : o.ns;
    if (o.name) {
        char *bname = fl_names_binding(s.kind.kind, o.name);
        s.fields = fl_asprintf("metadata.name=%s", bname);
        free(bname);
    }
    rc = o.watch || o.wait ? run_live(cp, &o, &s, &sigs) : run_once(cp, &o, &s);
out:
    fl_cli_kind_close(&s.kind);
    free(s.fields);
    free(o.kind);
    fl_client_free(cp);
    return rc;
}
