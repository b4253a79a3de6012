/* rollout_cmd.c - `flotilla ctl rollout`: a table of subverbs, and the two that read and
 * restore a template's revisions (docs/rollouts.md, "Revisions"); the staged rollout's
 * status|pause|resume|approve|abort are rollout_stage_cmd.c's:
 *
 *   flotilla ctl rollout history KIND/NAME [-n NS] [--revision N] [-o yaml|json]
 *   flotilla ctl rollout undo KIND/NAME [-n NS] [--to-revision N] [--dry-run]
 *   (both: [--kubeconfig F] [--context C])
 *
 * KIND is typed as kubectl takes it and resolved with discovery (kind_resolve.h). The
 * template is read first, so a missing object is its own error; its revisions are the
 * ControllerRevisions labelled with its uid (core/wellknown.h, FL_REVISION_*), in its
 * namespace or, for a cluster-scoped template, in karmada-system. They are listed as a
 * Table with the objects included, so AGE is the server's, as kubectl shows it.
 *
 * history prints kubectl's layout (REVISION, CHANGE-CAUSE, and AGE); with --revision, the
 * revision's data (the template as it was delivered). undo writes a revision's data back
 * onto the template (controllers/revision_data.h, fl_revision_restore) with a PUT that
 * carries the template's live resourceVersion: the normal write path, so admission,
 * policies, overrides and suspension apply as to any change, and a concurrent change makes
 * it fail instead of being overwritten. The revisions controller then renumbers the
 * restored revision as the newest. By default undo restores the newest revision whose data
 * differs from the template's now (kubectl's "previous revision").
 *
 * Exit codes: 0 done, 1 failure (one line on stderr), 2 usage. */
#include "cli/rollout_cmd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "cli/kind_resolve.h"
#include "cli/rollout_stage_cmd.h"
#include "client/client.h"
#include "controllers/revision_data.h"
#include "core/err.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/wellknown.h"
#include "core/yaml.h"

static const fl_gvr CRS = {"apps/v1", "controllerrevisions"};

typedef struct opts {
    const char *kubeconfig, *context, *ns, *output, *revision, *to_revision;
    const char *ref;  /* KIND/NAME as typed */
    const char *verb; /* "rollout history", for the messages */
    bool dry_run;
    long long n; /* --revision / --to-revision; 0: not given */
} opts;

/* One template and its revisions, as both subverbs read them. */
typedef struct target {
    fl_client *cp;
    fl_cli_kind k;
    const char *name, *ns; /* ns NULL for a cluster-scoped template */
    char *display;         /* "deployment.apps/web", as kubectl names it */
    json_t *tmpl;
    json_t *rows; /* [{"object": ControllerRevision, "age": "5m"}], oldest first */
} target;

/* ---- reading the target ---- */

static long long rev_of(const json_t *row)
{
    return (long long)fl_json_path_int(json_object_get(row, "object"), "revision", 0);
}

static int row_cmp(const void *a, const void *b)
{
    long long x = rev_of(*(json_t *const *)a), y = rev_of(*(json_t *const *)b);
    return x < y ? -1 : x > y;
}

/* The revisions of t->tmpl as a Table with their objects, into t->rows (oldest first). */
static int list_revisions(const opts *o, target *t)
{
    const char *rns = t->ns ? t->ns : FL_REVISION_CLUSTER_SCOPED_NAMESPACE;
    char *base = fl_client_path(&CRS, rns, NULL, NULL);
    char *path = fl_cat(base, "?includeObject=Object&labelSelector=" FL_REVISION_TEMPLATE_UID_LABEL "%3D",
                        fl_json_meta(t->tmpl, "uid"), NULL);
    free(base);
    json_t *table = NULL;
    fl_client_error ce = {0};
    int rc = fl_client_get_as(t->cp, path, "application/json;as=Table;v=v1;g=meta.k8s.io", NULL, &table, &ce);
    free(path);
    if (rc) {
        json_decref(table);
        return fl_ctl_out_fail(o->verb, "listing the revisions of %s: %s", t->display, fl_errmsg(ce.message, rc));
    }
    size_t age_at = SIZE_MAX, i;
    json_t *col, *row;
    json_array_foreach(json_object_get(table, "columnDefinitions"), i, col) if (!strcmp(
        fl_json_str(col, "name") ? fl_json_str(col, "name") : "", "Age")) age_at = i;
    size_t n = json_array_size(json_object_get(table, "rows"));
    json_t **rows = fl_calloc(n + 1, sizeof *rows);
    n = 0;
    json_array_foreach(json_object_get(table, "rows"), i, row) {
        json_t *obj = json_object_get(row, "object");
        if (!json_is_object(obj))
            continue;
        const char *age = json_string_value(json_array_get(json_object_get(row, "cells"), age_at));
        rows[n++] = json_pack("{sO ss}", "object", obj, "age", age ? age : "<unknown>");
    }
    qsort(rows, n, sizeof *rows, row_cmp);
    t->rows = json_array();
    for (i = 0; i < n; i++)
        json_array_append_new(t->rows, rows[i]);
    free(rows);
    json_decref(table);
    return 0;
}

/* Resolve, read the template and list its revisions. 0, or the exit code after one line. */
static int load_target(const opts *o, target *t)
{
    memset(t, 0, sizeof *t);
    if (fl_cli_control_plane(o->kubeconfig, o->context, o->verb, &t->cp))
        return 1;
    const char *slash = strchr(o->ref, '/');
    char *typed = fl_strndup(o->ref, (size_t)(slash - o->ref));
    int rc = fl_cli_kind_resolve(t->cp, typed, o->verb, &t->k);
    free(typed);
    if (rc)
        return rc;
    t->name = slash + 1;
    t->ns = t->k.namespaced ? o->ns : NULL;
    const char *av = t->k.api_version, *gs = strchr(av, '/');
    fl_strbuf b = FL_STRBUF_INIT;
    for (const char *c = t->k.kind; *c; c++)
        fl_strbuf_addc(&b, (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c));
    if (gs)
        fl_strbuf_printf(&b, ".%.*s", (int)(gs - av), av);
    fl_strbuf_printf(&b, "/%s", t->name);
    t->display = fl_strbuf_take(&b);
    fl_client_error ce = {0};
    rc = fl_client_get(t->cp, &(fl_gvr){t->k.api_version, t->k.resource}, t->ns, t->name, &t->tmpl, &ce);
    if (rc == FL_ENOTFOUND)
        return fl_ctl_out_fail(o->verb, "%s \"%s\" not found%s%s", t->k.kind, t->name, t->ns ? " in namespace " : "",
                               t->ns ? t->ns : "");
    if (rc)
        return fl_ctl_out_fail(o->verb, "%s \"%s\": %s", t->k.kind, t->name, fl_errmsg(ce.message, rc));
    return list_revisions(o, t);
}

static void target_close(target *t)
{
    json_decref(t->tmpl);
    json_decref(t->rows);
    free(t->display);
    fl_cli_kind_close(&t->k);
    fl_client_free(t->cp);
}

/* The revision numbered n, borrowed from t->rows; NULL when there is none. */
static const json_t *find_revision(const target *t, long long n)
{
    size_t i;
    json_t *row;
    json_array_foreach(t->rows, i, row) if (rev_of(row) == n) return json_object_get(row, "object");
    return NULL;
}

/* "1, 2, 3" (or "none"): what a missing revision's message offers instead. */
static char *numbers(const target *t)
{
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *row;
    json_array_foreach(t->rows, i, row) fl_strbuf_printf(&b, "%s%lld", i ? ", " : "", rev_of(row));
    if (!b.len)
        fl_strbuf_adds(&b, "none");
    return fl_strbuf_take(&b);
}

static int missing_revision(const opts *o, const target *t, long long n)
{
    char *have = numbers(t);
    int rc = fl_ctl_out_fail(o->verb, "%s has no revision %lld (its revisions: %s)", t->display, n, have);
    free(have);
    return rc;
}

/* ---- history ---- */

static int run_history(const opts *o)
{
    target t;
    int rc = load_target(o, &t);
    if (rc)
        goto out;
    if (o->n) {
        const json_t *cr = find_revision(&t, o->n);
        if (!cr) {
            rc = missing_revision(o, &t, o->n);
            goto out;
        }
        if (o->output) {
            fl_ctl_out_doc(o->output, cr);
        } else {
            printf("%s with revision #%lld\n", t.display, o->n);
            char *text = fl_yaml_dump(json_object_get(cr, "data"));
            fputs(text, stdout);
            free(text);
        }
        goto out;
    }
    size_t n = json_array_size(t.rows), i;
    if (o->output) {
        json_t *list = json_pack("{ss ss s[]}", "apiVersion", "v1", "kind", "List", "items");
        json_t *row;
        json_array_foreach(t.rows, i, row) json_array_append(json_object_get(list, "items"), json_object_get(row, "object"));
        fl_ctl_out_doc(o->output, list);
        json_decref(list);
        goto out;
    }
    printf("%s\n", t.display);
    if (!n) {
        printf("No revisions: %s has none recorded (revisions are kept for propagated templates).\n", t.display);
        goto out;
    }
    static const char *const HDR[] = {"REVISION", "CHANGE-CAUSE", "AGE"};
    char **cells = fl_calloc(n * 3, sizeof *cells);
    for (i = 0; i < n; i++) {
        const json_t *row = json_array_get(t.rows, i), *cr = json_object_get(row, "object");
        cells[i * 3] = fl_asprintf("%lld", rev_of(row));
        cells[i * 3 + 1] = fl_ctl_out_none(fl_json_meta_map(cr, "annotations", FL_REVISION_CHANGE_CAUSE_ANNOTATION));
        cells[i * 3 + 2] = fl_strdup(fl_json_str(row, "age"));
    }
    size_t width[3] = {0};
    fl_strbuf b = FL_STRBUF_INIT;
    fl_ctl_out_table(&b, HDR, 3, cells, n, NULL, width);
    fputs(b.p ? b.p : "", stdout);
    fl_strbuf_close(&b);
    for (i = 0; i < n * 3; i++)
        free(cells[i]);
    free(cells);
out:
    target_close(&t);
    return rc;
}

/* ---- undo ---- */

static int run_undo(const opts *o)
{
    target t;
    json_t *restored = NULL;
    int rc = load_target(o, &t);
    if (rc)
        goto out;
    const json_t *cr = NULL;
    if (o->n) {
        if (!(cr = find_revision(&t, o->n))) {
            rc = missing_revision(o, &t, o->n);
            goto out;
        }
    } else {
        json_t *crs = json_array();
        size_t i;
        json_t *row;
        json_array_foreach(t.rows, i, row) json_array_append(crs, json_object_get(row, "object"));
        cr = fl_revision_previous(t.tmpl, crs); /* still referenced by t.rows */
        json_decref(crs);
        if (!cr) {
            rc = fl_ctl_out_fail(o->verb, "%s has no previous revision to go back to (%s recorded)", t.display,
                                 json_array_size(t.rows) ? "only its current one is" : "none is");
            goto out;
        }
    }
    long long n = (long long)fl_json_path_int(cr, "revision", 0);
    if (fl_revision_is_current(t.tmpl, cr)) {
        printf("%s skipped rollback (current template already matches revision %lld)\n", t.display, n);
        goto out;
    }
    restored = fl_revision_restore(t.tmpl, json_object_get(cr, "data"),
                                   fl_json_meta_map(cr, "annotations", FL_REVISION_CHANGE_CAUSE_ANNOTATION));
    if (!restored) {
        rc = fl_ctl_out_fail(o->verb, "revision %lld of %s holds no data to restore", n, t.display);
        goto out;
    }
    fl_write_opts wo = {.field_manager = "flotilla-rollout-undo", .dry_run = o->dry_run};
    fl_client_error ce = {0};
    int e = fl_client_update(t.cp, &(fl_gvr){t.k.api_version, t.k.resource}, t.ns, restored, &wo, NULL, &ce);
    if (e == FL_ECONFLICT)
        rc = fl_ctl_out_fail(o->verb, "%s changed while revision %lld was being restored: nothing written; run it again",
                             t.display, n);
    else if (e)
        rc = fl_ctl_out_fail(o->verb, "restoring revision %lld of %s: %s", n, t.display, fl_errmsg(ce.message, e));
    else
        printf("%s rolled back to revision %lld%s\n", t.display, n, o->dry_run ? " (server dry run)" : "");
out:
    json_decref(restored);
    target_close(&t);
    return rc;
}

/* ---- the subverbs ---- */

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla ctl rollout SUBCOMMAND KIND/NAME [options]\n"
               "\n"
               "A propagated template's revisions (docs/rollouts.md, \"Revisions\"):\n"
               "  history KIND/NAME   its revisions: REVISION, CHANGE-CAUSE, AGE\n"
               "                        --revision N     the template as revision N delivered it\n"
               "                        -o, --output FMT yaml or json: the ControllerRevisions as stored\n"
               "  undo KIND/NAME      write a revision back onto the template (through the API, with its\n"
               "                      live resourceVersion: policies, overrides and suspension apply)\n"
               "                        --to-revision N  which one (default: the previous revision)\n"
               "                        --dry-run        ask the server to check the write, store nothing\n"
               "\n"
               "A template's staged rollout (docs/rollouts.md, \"Staged rollouts\"):\n"
               "  status|pause|resume|approve|abort KIND/NAME   (flotilla ctl rollout status --help)\n"
               "\n"
               "KIND is the template's kind as kubectl takes it: Deployment, deployments, deploy,\n"
               "deployments.apps.\n"
               "\n"
               "Options:\n"
               "  -n, --namespace NS  the template's namespace (default: default)\n"
               "  --kubeconfig FILE   the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
               "  --context NAME      context in that kubeconfig\n");
}

/* Subverbs: each takes the parsed options. Another file's subverbs (the staged rollout's)
 * join with a line here. */
static const struct subverb {
    const char *name, *verb;
    bool takes_output, takes_revision, takes_undo_flags;
    int (*run)(const opts *o);
} SUBVERBS[] = {
    {"history", "rollout history", true, true, false, run_history},
    {"undo", "rollout undo", false, false, true, run_undo},
};
#define NSUB (sizeof SUBVERBS / sizeof SUBVERBS[0])

/* A revision number as a flag gives it: a non-negative integer (0: the default), else -1. */
static long long revision_number(const char *s)
{
    char *end = NULL;
    long long v = s && *s ? strtoll(s, &end, 10) : -1;
    return end && !*end && v >= 0 ? v : -1;
}

static int parse(int argc, char **argv, opts *o, const struct subverb **sv, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(opts, kubeconfig)}, {"context", NULL, offsetof(opts, context)},
        {"namespace", "n", offsetof(opts, ns)},           {"output", "o", offsetof(opts, output)},
        {"revision", NULL, offsetof(opts, revision)},     {"to-revision", NULL, offsetof(opts, to_revision)},
    };
    const char *pos[3] = {0};
    int npos = 0;
    o->verb = "rollout";
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (!strcmp(a, "--dry-run") || !strcmp(a, "--dry-run=server") || !strcmp(a, "--dry-run=client")) {
            o->dry_run = true;
            continue;
        }
        if (!strcmp(a, "--dry-run=none"))
            continue;
        if (a[0] == '-' && a[1]) {
            const char *why = fl_cli_take_flag(flags, sizeof flags / sizeof *flags, argc, argv, &i, o);
            if (why)
                return fl_ctl_out_usage(o->verb, why, a);
            continue;
        }
        if (npos == 3)
            return fl_ctl_out_usage(o->verb, "unexpected argument \"%s\"", a);
        pos[npos++] = a;
    }
    for (size_t k = 0; npos && k < NSUB; k++)
        if (!strcmp(pos[0], SUBVERBS[k].name))
            *sv = &SUBVERBS[k];
    if (!*sv)
        return fl_ctl_out_usage(o->verb, "%s",
                                npos ? "unknown subcommand: expected history, undo, status, pause, resume, approve or abort"
                                     : "a subcommand is required: history, undo, status, pause, resume, approve or abort");
    o->verb = (*sv)->verb;
    if (npos < 2)
        return fl_ctl_out_usage(o->verb, "%s", "KIND/NAME is required, e.g. deployment/web");
    if (npos > 2)
        return fl_ctl_out_usage(o->verb, "unexpected argument \"%s\"", pos[2]);
    o->ref = pos[1];
    if (!fl_cli_kind_name(o->ref))
        return fl_ctl_out_usage(o->verb, "\"%s\" is not KIND/NAME (e.g. deployment/web)", o->ref);
    if (o->output && !(*sv)->takes_output)
        return fl_ctl_out_usage(o->verb, "%s", "-o is for history");
    if (o->output && strcmp(o->output, "yaml") && strcmp(o->output, "json"))
        return fl_ctl_out_usage(o->verb, "-o %s: expected yaml or json", o->output);
    if (o->revision && !(*sv)->takes_revision)
        return fl_ctl_out_usage(o->verb, "%s", "--revision is for history (undo takes --to-revision)");
    if ((o->to_revision || o->dry_run) && !(*sv)->takes_undo_flags)
        return fl_ctl_out_usage(o->verb, "%s", "--to-revision and --dry-run are for undo");
    const char *num = o->revision ? o->revision : o->to_revision;
    if (num && (o->n = revision_number(num)) < 0)
        return fl_ctl_out_usage(o->verb, "revision \"%s\": expected a non-negative integer", num);
    if (!o->ns)
        o->ns = "default";
    return 0;
}

/* The subcommand: the first argument that is not a flag or a flag's value, or NULL. */
static const char *subcommand(int argc, char **argv)
{
    static const char *const with_value[] = {"-n", "--namespace", "-o", "--output", "--kubeconfig", "--context",
                                             "--timeout", "--revision", "--to-revision", NULL};
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] != '-')
            return argv[i];
        for (int k = 0; with_value[k]; k++)
            if (!strcmp(argv[i], with_value[k]))
                i++;
    }
    return NULL;
}

int fl_ctl_rollout(int argc, char **argv)
{
    if (fl_ctl_rollout_stage_has(subcommand(argc, argv)))
        return fl_ctl_rollout_stage(argc, argv);
    opts o = {0};
    const struct subverb *sv = NULL;
    bool help = false;
    int rc = parse(argc, argv, &o, &sv, &help);
    if (help) {
        usage(stdout);
        return 0;
    }
    return rc ? rc : sv->run(&o);
}
