/* failover_cmd.c - `flotilla ctl failover history KIND/NAME`: a workload's failovers as a
 * timeline, read from its binding.
 *
 *   flotilla ctl failover history KIND/NAME [-n NS] [-o yaml|json] [--kubeconfig F] [--context C]
 *
 * KIND is typed as kubectl takes it (Deployment, deployment, deployments, deploy, or
 * deployments.apps) and resolved with one aggregated discovery read of /api and one of /apis.
 * The template is read first, so "no such workload" and "the workload has no binding" are
 * different errors. Its binding has the name the detector gives it (fl_names_binding: NAME-kind,
 * lowercased): a ResourceBinding in the template's namespace, or a ClusterResourceBinding for
 * a cluster-scoped template.
 *
 * The table has a row per status.failoverHistory[] item (newest last, as stored) and an
 * in-progress row per spec.gracefulEvictionTasks[] entry that no open history item stands for:
 * a task exists from the write that moves the binding until its purge condition is met, and
 * a history item is written by the failover controllers, which may not have run yet (or, on an
 * older server, not at all). -o yaml|json prints both lists as stored. Exit codes: 0 done,
 * 1 failure, 2 usage. */
#include "cli/failover_cmd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "cli/kind_resolve.h"
#include "client/client.h"
#include "controllers/names.h"
#include "core/err.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/timefmt.h"

#define VERB "failover history"

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};

/* ---- the table ---- */

enum { C_STARTED, C_FROM, C_TO, C_REASON, C_PURGE, C_STATE, C_OUTCOME, C_COMPLETED, NCOLS };
static const char *const HEADERS[NCOLS] = {"STARTED", "FROM",  "TO",      "REASON",
                                           "PURGE MODE", "PRESERVED STATE", "OUTCOME", "COMPLETED"};

typedef struct row {
    char *cell[NCOLS];
    int64_t started; /* ms since the epoch, for the order; -1 when unreadable */
    size_t seq;      /* position of entry, to keep history order among equal times */
} row;

/* "a,b" from an array of strings, or of {name} objects (spec.clusters). */
static char *join_clusters(const json_t *arr, const char *skip)
{
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *s = json_is_string(v) ? json_string_value(v) : fl_json_str(v, "name");
        if (!s || (skip && !strcmp(s, skip)))
            continue;
        if (b.len)
            fl_strbuf_addc(&b, ',');
        fl_strbuf_adds(&b, s);
    }
    char *out = fl_ctl_out_none(b.p);
    fl_strbuf_close(&b);
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "k=v,k2=v2" of a preservedLabelState object, keys sorted so the output is stable. */
static char *label_state(const json_t *state)
{
    size_t n = json_is_object(state) ? json_object_size(state) : 0, k = 0;
    if (!n)
        return fl_ctl_out_none(NULL);
    const char **keys = fl_calloc(n, sizeof *keys);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)state, key, v) keys[k++] = key;
    qsort(keys, k, sizeof *keys, cmp_str);
    fl_strbuf b = FL_STRBUF_INIT;
    for (size_t i = 0; i < k; i++) {
        const char *val = json_string_value(json_object_get(state, keys[i]));
        fl_strbuf_printf(&b, "%s%s=%s", i ? "," : "", keys[i], val ? val : "");
    }
    free(keys);
    return fl_strbuf_take(&b);
}

/* A task that an open history item (same cluster, no completionTime yet), or one started
 * when the task was made, stands for. */
static const json_t *history_for_task(const json_t *history, const json_t *task)
{
    const char *from = fl_json_str(task, "fromCluster"), *made = fl_json_str(task, "creationTimestamp");
    size_t i;
    json_t *h;
    json_array_foreach(history, i, h) {
        const char *hf = fl_json_str(h, "fromCluster"), *start = fl_json_str(h, "startTime");
        if (!from || !hf || strcmp(from, hf))
            continue;
        if (!fl_json_str(h, "completionTime") || (made && start && fl_time_parse(made) == fl_time_parse(start)))
            return h;
    }
    return NULL;
}

/* The task an open history item goes with (for its purge mode), or NULL. */
static const json_t *task_for_history(const json_t *tasks, const json_t *history, const json_t *h)
{
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t) if (history_for_task(history, t) == h) return t;
    return NULL;
}

static int row_cmp(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->started != y->started)
        return x->started < y->started ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

char *fl_failover_table(const json_t *binding)
{
    const json_t *history = fl_json_path(binding, "status.failoverHistory");
    const json_t *tasks = fl_json_path(binding, "spec.gracefulEvictionTasks");
    const json_t *now_at = fl_json_path(binding, "spec.clusters");
    size_t nh = json_is_array(history) ? json_array_size(history) : 0;
    size_t nt = json_is_array(tasks) ? json_array_size(tasks) : 0, n = 0;
    if (!nh && !nt)
        return NULL;
    row *rows = fl_calloc(nh + nt, sizeof *rows);
    for (size_t i = 0; i < nh; i++) {
        const json_t *h = json_array_get(history, i), *t = task_for_history(tasks, history, h);
        const char *done = fl_json_str(h, "completionTime"), *purge = fl_json_str(h, "purgeMode");
        row *r = &rows[n++];
        r->cell[C_STARTED] = fl_ctl_out_none(fl_json_str(h, "startTime"));
        r->cell[C_FROM] = fl_ctl_out_none(fl_json_str(h, "fromCluster"));
        /* still under way, the entry names no clusters after it yet: where the binding is now */
        const json_t *after = json_object_get(h, "clustersAfterFailover");
        r->cell[C_TO] = !done && !json_array_size(after) ? join_clusters(now_at, fl_json_str(h, "fromCluster"))
                                                         : join_clusters(after, NULL);
        r->cell[C_REASON] = fl_ctl_out_none(fl_json_str(h, "reason"));
        r->cell[C_PURGE] = fl_ctl_out_none(purge ? purge : fl_json_str(t, "purgeMode"));
        r->cell[C_STATE] = label_state(json_object_get(h, "preservedLabelState"));
        r->cell[C_OUTCOME] = fl_strdup(done ? (fl_json_str(h, "outcome") ? fl_json_str(h, "outcome") : "<none>")
                                            : "InProgress");
        r->cell[C_COMPLETED] = fl_strdup(done ? done : "<pending>");
        r->started = fl_time_parse(fl_json_str(h, "startTime"));
        r->seq = i;
    }
    for (size_t i = 0; i < nt; i++) {
        const json_t *t = json_array_get(tasks, i);
        if (history_for_task(history, t))
            continue;
        /* not in the history (yet): where the binding is now is where it went */
        row *r = &rows[n++];
        r->cell[C_STARTED] = fl_ctl_out_none(fl_json_str(t, "creationTimestamp"));
        r->cell[C_FROM] = fl_ctl_out_none(fl_json_str(t, "fromCluster"));
        r->cell[C_TO] = join_clusters(now_at, fl_json_str(t, "fromCluster"));
        r->cell[C_REASON] = fl_ctl_out_none(fl_json_str(t, "reason"));
        r->cell[C_PURGE] = fl_ctl_out_none(fl_json_str(t, "purgeMode"));
        r->cell[C_STATE] = label_state(json_object_get(t, "preservedLabelState"));
        r->cell[C_OUTCOME] = fl_strdup("InProgress");
        r->cell[C_COMPLETED] = fl_strdup("<pending>");
        r->started = fl_time_parse(fl_json_str(t, "creationTimestamp"));
        r->seq = nh + i;
    }
    qsort(rows, n, sizeof *rows, row_cmp);

    /* kubectl's layout (ctl_out.h), the rows' cells row-major */
    char **cells = fl_calloc(n * NCOLS, sizeof *cells);
    for (size_t i = 0; i < n; i++)
        memcpy(cells + i * NCOLS, rows[i].cell, sizeof rows[i].cell);
    size_t width[NCOLS] = {0};
    fl_strbuf b = FL_STRBUF_INIT;
    fl_ctl_out_table(&b, HEADERS, NCOLS, cells, n, NULL, width);
    for (size_t i = 0; i < n * NCOLS; i++)
        free(cells[i]);
    free(cells);
    free(rows);
    return fl_strbuf_take(&b);
}

/* ---- the command ---- */

typedef struct opts {
    const char *kubeconfig, *context, *ns, *output;
    const char *ref; /* KIND/NAME as typed */
} opts;

static void usage(void)
{
    printf("Usage: flotilla ctl failover history KIND/NAME [options]\n"
           "\n"
           "Where a workload has been and why it moved: one row per failover in its binding's\n"
           "status.failoverHistory, and one in-progress row per graceful eviction task that no\n"
           "history item stands for yet (docs/failover.md).\n"
           "\n"
           "KIND is the template's kind as kubectl takes it: Deployment, deployments, deploy,\n"
           "deployments.apps.\n"
           "\n"
           "Options:\n"
           "  -n, --namespace NS  the template's namespace (default: default)\n"
           "  -o, --output FMT    yaml or json: the history and the tasks as stored\n"
           "  --kubeconfig FILE   the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
           "  --context NAME      context in that kubeconfig\n");
}

static int parse(int argc, char **argv, opts *o, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(opts, kubeconfig)}, {"context", NULL, offsetof(opts, context)},
        {"namespace", "n", offsetof(opts, ns)},           {"output", "o", offsetof(opts, output)},
    };
    const char *pos[3] = {0};
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
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
    if (npos < 1 || strcmp(pos[0], "history"))
        return fl_ctl_out_usage(VERB, "%s", npos ? "unknown subcommand: expected \"history\"" : "a subcommand is required: history");
    if (npos < 2)
        return fl_ctl_out_usage(VERB, "%s", "history needs KIND/NAME, e.g. deployment/web");
    if (npos > 2)
        return fl_ctl_out_usage(VERB, "unexpected argument \"%s\"", pos[2]);
    o->ref = pos[1];
    if (!fl_cli_kind_name(o->ref))
        return fl_ctl_out_usage(VERB, "\"%s\" is not KIND/NAME (e.g. deployment/web)", o->ref);
    if (o->output && strcmp(o->output, "yaml") && strcmp(o->output, "json"))
        return fl_ctl_out_usage(VERB, "-o %s: expected yaml or json", o->output);
    if (!o->ns)
        o->ns = "default";
    return 0;
}

static void print_raw(const opts *o, const json_t *rb)
{
    json_t *hist = fl_json_path(rb, "status.failoverHistory"), *tasks = fl_json_path(rb, "spec.gracefulEvictionTasks");
    json_t *doc = json_object();
    json_object_set_new(doc, "binding", json_string(fl_json_meta(rb, "name") ? fl_json_meta(rb, "name") : ""));
    if (fl_json_meta(rb, "namespace"))
        json_object_set_new(doc, "namespace", json_string(fl_json_meta(rb, "namespace")));
    json_object_set_new(doc, "failoverHistory", json_is_array(hist) ? json_incref(hist) : json_array());
    json_object_set_new(doc, "gracefulEvictionTasks", json_is_array(tasks) ? json_incref(tasks) : json_array());
    fl_ctl_out_doc(o->output, doc);
    json_decref(doc);
}

static int run(const opts *o)
{
    fl_client *cp = NULL;
    if (fl_cli_control_plane(o->kubeconfig, o->context, VERB, &cp))
        return 1;
    fl_cli_kind k = {0};
    json_t *tmpl = NULL, *rb = NULL;
    const char *name = strchr(o->ref, '/') + 1;
    char *bname = NULL, *typed = fl_strndup(o->ref, (size_t)(name - o->ref - 1));
    int rc = fl_cli_kind_resolve(cp, typed, VERB, &k);
    if (rc)
        goto out;
    const char *ns = k.namespaced ? o->ns : NULL;
    fl_client_error ce = {0};
    int e = fl_client_get(cp, &(fl_gvr){k.api_version, k.resource}, ns, name, &tmpl, &ce);
    if (e) {
        rc = e == FL_ENOTFOUND ? fl_ctl_out_fail(VERB, "%s \"%s\" not found%s%s", k.kind, name, ns ? " in namespace " : "", ns ? ns : "")
                               : fl_ctl_out_fail(VERB, "%s \"%s\": %s", k.kind, name, fl_errmsg(ce.message, e));
        goto out;
    }
    bname = fl_names_binding(k.kind, name);
    e = fl_client_get(cp, ns ? &RBS : &CRBS, ns, bname, &rb, &ce);
    if (e) {
        rc = e == FL_ENOTFOUND ? fl_ctl_out_fail(VERB, "%s \"%s\" has no %s \"%s\": no propagation policy has claimed it", k.kind,
                                      name, ns ? "ResourceBinding" : "ClusterResourceBinding", bname)
                               : fl_ctl_out_fail(VERB, "%s \"%s\": %s", ns ? "ResourceBinding" : "ClusterResourceBinding", bname,
                                      fl_errmsg(ce.message, e));
        goto out;
    }
    if (o->output) {
        print_raw(o, rb);
    } else {
        char *table = fl_failover_table(rb);
        if (table)
            fputs(table, stdout);
        else
            printf("No failovers for %s \"%s\" (%s %s).\n", k.kind, name,
                   ns ? "ResourceBinding" : "ClusterResourceBinding", bname);
        free(table);
    }
out:
    json_decref(tmpl);
    json_decref(rb);
    free(bname);
    free(typed);
    fl_cli_kind_close(&k);
    fl_client_free(cp);
    return rc;
}

int fl_ctl_failover(int argc, char **argv)
{
    opts o = {0};
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage();
        return 0;
    }
    return rc ? rc : run(&o);
}
