/* rollout_stage_cmd.c - `flotilla ctl rollout status|pause|resume|approve|abort KIND/NAME`.
 *
 *   flotilla ctl rollout status KIND/NAME [-n NS] [-o yaml|json] [--watch [--timeout D]]
 *   flotilla ctl rollout pause|resume|approve|abort KIND/NAME [-n NS]
 *
 * The template is read first; the policy that claimed it (its annotations) leads to the
 * RolloutStrategy naming that policy (the first by namespace/name, as the controller picks),
 * and the template's uid to its entry in the strategy's status.rollouts. What each does:
 *   status   the entry: phase, stage, what it waits for, a row per cluster; --watch prints a
 *            line each time that changes, until the rollout is over (or --timeout);
 *   pause    spec.paused: true (the strategy: every template of its policy holds);
 *   resume   spec.paused removed;
 *   approve  the stage waiting for approval passes: an annotation naming the generation and
 *            the stage, so an approval never carries over to a later change;
 *   abort    the rollout of this generation ends where it is.
 * Exit codes: 0 done, 1 failure, 2 usage. */
#include "cli/rollout_stage_cmd.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "cli/kind_resolve.h"
#include "client/client.h"
#include "controllers/rollout_gate.h"
#include "core/err.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/timefmt.h"
#include "core/wellknown.h"

static const fl_gvr STRATEGIES = {"apps.flotilla.io/v1alpha1", "rolloutstrategies"};
/* what the controller reads (src/controllers/rollout_priv.h) */
#define APPROVE_PREFIX "approve.rollouts.flotilla.io/"
#define ABORT_PREFIX "abort.rollouts.flotilla.io/"

static const char *const SUBS[] = {"status", "pause", "resume", "approve", "abort", NULL};

bool fl_ctl_rollout_stage_has(const char *sub)
{
    for (size_t i = 0; sub && SUBS[i]; i++)
        if (!strcmp(sub, SUBS[i]))
            return true;
    return false;
}

typedef struct opts {
    const char *kubeconfig, *context, *ns, *output, *timeout;
    const char *sub, *ref;
    bool watch;
    char verb[32];
} opts;

static void usage(void)
{
    printf("Usage: flotilla ctl rollout status|pause|resume|approve|abort KIND/NAME [options]\n"
           "\n"
           "A template's staged rollout, through the RolloutStrategy naming the policy that\n"
           "claimed it (docs/rollouts.md).\n"
           "  status   phase, stage, what it waits for, and each cluster's progress\n"
           "  pause    hold the strategy's rollouts where they are (spec.paused)\n"
           "  resume   let them go on\n"
           "  approve  pass the stage that waits for an approval\n"
           "  abort    end this generation's rollout where it is\n"
           "\n"
           "Options:\n"
           "  -n, --namespace NS  the template's namespace (default: default)\n"
           "  -o, --output FMT    status: yaml or json, the rollout entry as stored\n"
           "  -w, --watch         status: a line per change until the rollout is over\n"
           "  --timeout D         with --watch: give up after D (e.g. 90s, 5m; default 10m)\n"
           "  --kubeconfig FILE   the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
           "  --context NAME      context in that kubeconfig\n");
}

static int parse(int argc, char **argv, opts *o, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(opts, kubeconfig)}, {"context", NULL, offsetof(opts, context)},
        {"namespace", "n", offsetof(opts, ns)},           {"output", "o", offsetof(opts, output)},
        {"timeout", NULL, offsetof(opts, timeout)},
    };
    const char *pos[3] = {0};
    int npos = 0;
    snprintf(o->verb, sizeof o->verb, "rollout");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (!strcmp(a, "-w") || !strcmp(a, "--watch")) {
            o->watch = true;
            continue;
        }
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
    if (!npos || !fl_ctl_rollout_stage_has(pos[0]))
        return fl_ctl_out_usage(o->verb, "%s", "expected a subcommand: status, pause, resume, approve or abort");
    o->sub = pos[0];
    snprintf(o->verb, sizeof o->verb, "rollout %s", o->sub);
    if (npos < 2)
        return fl_ctl_out_usage(o->verb, "%s", "needs KIND/NAME, e.g. deployment/web");
    if (npos > 2)
        return fl_ctl_out_usage(o->verb, "unexpected argument \"%s\"", pos[2]);
    o->ref = pos[1];
    if (!fl_cli_kind_name(o->ref))
        return fl_ctl_out_usage(o->verb, "\"%s\" is not KIND/NAME (e.g. deployment/web)", o->ref);
    if (o->output && strcmp(o->output, "yaml") && strcmp(o->output, "json"))
        return fl_ctl_out_usage(o->verb, "-o %s: expected yaml or json", o->output);
    if ((o->watch || o->output || o->timeout) && strcmp(o->sub, "status"))
        return fl_ctl_out_usage(o->verb, "%s", "-o, --watch and --timeout go with status only");
    if (!o->ns)
        o->ns = "default";
    return 0;
}

/* The strategy governing tmpl (new reference) or NULL after printing why. */
static json_t *strategy_of(fl_client *cp, const opts *o, const json_t *tmpl)
{
    const char *cpp = fl_json_meta_map(tmpl, "annotations", FL_CPP_NAME_ANNOTATION),
               *pp = fl_json_meta_map(tmpl, "annotations", FL_PP_NAME_ANNOTATION),
               *ppns = fl_json_meta_map(tmpl, "annotations", FL_PP_NAMESPACE_ANNOTATION);
    if (!cpp && (!pp || !ppns)) {
        fl_ctl_out_fail(o->verb, "%s \"%s\" is not claimed by any propagation policy", fl_json_str(tmpl, "kind"),
                        fl_json_meta(tmpl, "name"));
        return NULL;
    }
    fl_list_result lr = {0};
    fl_client_error ce = {0};
    int rc = fl_client_list(cp, &STRATEGIES, cpp ? NULL : ppns, NULL, &lr, &ce);
    if (rc) {
        fl_ctl_out_fail(o->verb, "listing RolloutStrategies: %s", fl_errmsg(ce.message, rc));
        return NULL;
    }
    json_t *best = fl_rollout_governing(lr.items, tmpl); /* the rule the binding controller holds by */
    json_incref(best);
    fl_list_result_close(&lr);
    if (!best)
        fl_ctl_out_fail(o->verb, "no RolloutStrategy names %s \"%s\" (the policy of %s \"%s\")",
                        cpp ? "ClusterPropagationPolicy" : "PropagationPolicy", cpp ? cpp : pp,
                        fl_json_str(tmpl, "kind"), fl_json_meta(tmpl, "name"));
    return best;
}

static bool over(const char *phase)
{
    static const char *const done[] = {"Completed", "RolledBack", "Halted", "Aborted", NULL};
    for (size_t i = 0; phase && done[i]; i++)
        if (!strcmp(phase, done[i]))
            return true;
    return false;
}

static int count(const json_t *e, const char *state)
{
    int n = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(e, "clusters"), i, c) n += fl_json_str(c, "state") &&
                                                                  !strcmp(fl_json_str(c, "state"), state);
    return n;
}

/* One progress line: generation, phase, stage, counts, and what it waits for or why it ended. */
static char *progress_line(const json_t *e)
{
    const char *phase = fl_json_str(e, "phase"), *wait = fl_json_str(e, "waitingFor"),
               *msg = fl_json_str(e, "message");
    bool released = json_is_true(json_object_get(e, "releaseAll"));
    size_t n = json_array_size(json_object_get(e, "clusters"));
    return fl_asprintf("generation %lld %s stage %s: %d/%zu Current, %d released, %d held, %d failed%s%s",
                       (long long)fl_json_path_int(e, "generation", 0), phase ? phase : "?",
                       fl_json_str(e, "stageName") ? fl_json_str(e, "stageName") : "-", count(e, "Current"), n,
                       released ? (int)n : count(e, "Released"), released ? 0 : count(e, "Held"), count(e, "Failed"),
                       wait || msg ? ": " : "", wait ? wait : (msg ? msg : ""));
}

static void print_table(const json_t *e)
{
    enum { NC = 5 };
    static const char *const hdr[NC] = {"CLUSTER", "STAGE", "STATE", "SINCE", "REASON"};
    const json_t *cl = json_object_get(e, "clusters");
    size_t n = json_array_size(cl);
    char **cells = fl_calloc(n * NC + 1, sizeof *cells);
    bool all = json_is_true(json_object_get(e, "releaseAll"));
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(cl, i);
        const char *state = fl_json_str(c, "state");
        cells[i * NC] = fl_ctl_out_none(fl_json_str(c, "name"));
        cells[i * NC + 1] = fl_ctl_out_none(fl_json_str(c, "stage"));
        cells[i * NC + 2] = fl_ctl_out_none(all && state && !strcmp(state, "Held") ? "Released" : state);
        cells[i * NC + 3] = fl_ctl_out_none(fl_json_str(c, "since"));
        cells[i * NC + 4] = fl_ctl_out_none(fl_json_str(c, "reason"));
    }
    fl_strbuf b = FL_STRBUF_INIT;
    size_t width[NC] = {0};
    fl_ctl_out_table(&b, hdr, NC, cells, n, NULL, width);
    fputs(fl_strbuf_str(&b), stdout);
    fl_strbuf_close(&b);
    for (size_t i = 0; i < n * NC; i++)
        free(cells[i]);
    free(cells);
}

static json_t *get_strategy(fl_client *cp, const json_t *s)
{
    json_t *out = NULL;
    fl_client_error ce = {0};
    fl_client_get(cp, &STRATEGIES, fl_json_meta(s, "namespace"), fl_json_meta(s, "name"), &out, &ce);
    return out;
}

static int status(fl_client *cp, const opts *o, json_t *s, const json_t *tmpl)
{
    const char *uid = fl_json_meta(tmpl, "uid"), *kind = fl_json_str(tmpl, "kind"),
               *name = fl_json_meta(tmpl, "name");
    if (!o->watch) {
        const json_t *e = fl_rollout_entry(s, uid);
        if (!e)
            return fl_ctl_out_fail(o->verb, "RolloutStrategy \"%s\" has no rollout of %s \"%s\" yet",
                                   fl_json_meta(s, "name"), kind, name);
        if (o->output) {
            fl_ctl_out_doc(o->output, e);
            return 0;
        }
        char *line = progress_line(e);
        printf("%s/%s (RolloutStrategy %s): %s\n", kind, name, fl_json_meta(s, "name"), line);
        free(line);
        print_table(e);
        return 0;
    }
    int64_t limit = o->timeout ? fl_cli_duration_ms(o->timeout) : 600000, start = fl_time_mono_ms();
    char *last = NULL;
    int rc = 1;
    json_t *cur = json_incref(s);
    for (;;) {
        const json_t *e = fl_rollout_entry(cur, uid);
        char *line = e ? progress_line(e) : fl_strdup("waiting for the rollout to start");
        if (!last || strcmp(last, line)) {
            char ts[FL_TIME_BUF];
            fl_time_format(fl_time_now_ms(), false, ts);
            printf("%s %s\n", ts, line);
            fflush(stdout);
            free(last);
            last = line;
        } else {
            free(line);
        }
        const char *phase = fl_json_str(e, "phase");
        if (over(phase)) {
            rc = !strcmp(phase, "Completed") || !strcmp(phase, "RolledBack") ? 0 : 1;
            break;
        }
        if (fl_time_mono_ms() - start > limit) {
            rc = fl_ctl_out_fail(o->verb, "timed out after %s: %s", o->timeout ? o->timeout : "10m", last);
            break;
        }
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
        json_t *fresh = get_strategy(cp, cur);
        if (fresh) {
            json_decref(cur);
            cur = fresh;
        }
    }
    free(last);
    json_decref(cur);
    return rc;
}

/* A merge patch of the strategy; 0 or 1 after printing why. */
static int patch(fl_client *cp, const opts *o, const json_t *s, json_t *p)
{
    char *body = json_dumps(p, JSON_COMPACT);
    fl_client_error ce = {0};
    int rc = fl_client_patch(cp, &STRATEGIES, fl_json_meta(s, "namespace"), fl_json_meta(s, "name"), FL_PATCH_MERGE,
                             body, strlen(body), NULL, NULL, &ce);
    free(body);
    json_decref(p);
    return rc ? fl_ctl_out_fail(o->verb, "RolloutStrategy \"%s\": %s", fl_json_meta(s, "name"),
                                fl_errmsg(ce.message, rc))
              : 0;
}

static int steer(fl_client *cp, const opts *o, const json_t *s, const json_t *tmpl)
{
    const char *uid = fl_json_meta(tmpl, "uid"), *kind = fl_json_str(tmpl, "kind"), *name = fl_json_meta(tmpl, "name"),
               *sname = fl_json_meta(s, "name");
    if (!strcmp(o->sub, "pause") || !strcmp(o->sub, "resume")) {
        bool pause = !strcmp(o->sub, "pause");
        int rc = patch(cp, o, s, json_pack("{s:{s:o}}", "spec", "paused", pause ? json_true() : json_null()));
        if (!rc)
            printf("RolloutStrategy %s %s (every template of its policy)\n", sname, pause ? "paused" : "resumed");
        return rc;
    }
    const json_t *e = fl_rollout_entry(s, uid);
    const char *phase = fl_json_str(e, "phase");
    json_int_t gen = fl_json_path_int(e, "generation", 0);
    char *key = NULL, *value = NULL;
    if (!strcmp(o->sub, "approve")) {
        if (!phase || strcmp(phase, "WaitingForApproval"))
            return fl_ctl_out_fail(o->verb, "the rollout of %s \"%s\" waits for no approval (phase %s)", kind, name,
                                   phase ? phase : "none");
        key = fl_cat(APPROVE_PREFIX, uid, NULL);
        value = fl_asprintf("%lld/%s", (long long)gen, fl_json_str(e, "stageName"));
    } else {
        if (!phase || over(phase))
            return fl_ctl_out_fail(o->verb, "the rollout of %s \"%s\" is not running (phase %s)", kind, name,
                                   phase ? phase : "none");
        key = fl_cat(ABORT_PREFIX, uid, NULL);
        value = fl_asprintf("%lld", (long long)gen);
    }
    int rc = patch(cp, o, s, json_pack("{s:{s:{s:s}}}", "metadata", "annotations", key, value));
    if (!rc && !strcmp(o->sub, "approve"))
        printf("approved stage %s of %s/%s generation %lld\n", fl_json_str(e, "stageName"), kind, name,
               (long long)gen);
    else if (!rc)
        printf("aborted the rollout of %s/%s generation %lld at stage %s\n", kind, name, (long long)gen,
               fl_json_str(e, "stageName"));
    free(key);
    free(value);
    return rc;
}

static int run(const opts *o)
{
    fl_client *cp = NULL;
    if (fl_cli_control_plane(o->kubeconfig, o->context, o->verb, &cp))
        return 1;
    fl_cli_kind k = {0};
    json_t *tmpl = NULL, *s = NULL;
    const char *name = strchr(o->ref, '/') + 1;
    char *typed = fl_strndup(o->ref, (size_t)(name - o->ref - 1));
    int rc = fl_cli_kind_resolve(cp, typed, o->verb, &k);
    if (rc)
        goto out;
    const char *ns = k.namespaced ? o->ns : NULL;
    fl_client_error ce = {0};
    int e = fl_client_get(cp, &(fl_gvr){k.api_version, k.resource}, ns, name, &tmpl, &ce);
    if (e) {
        rc = e == FL_ENOTFOUND ? fl_ctl_out_fail(o->verb, "%s \"%s\" not found%s%s", k.kind, name,
                                                 ns ? " in namespace " : "", ns ? ns : "")
                               : fl_ctl_out_fail(o->verb, "%s \"%s\": %s", k.kind, name, fl_errmsg(ce.message, e));
        goto out;
    }
    s = strategy_of(cp, o, tmpl);
    if (!s) {
        rc = 1;
        goto out;
    }
    rc = !strcmp(o->sub, "status") ? status(cp, o, s, tmpl) : steer(cp, o, s, tmpl);
out:
    json_decref(tmpl);
    json_decref(s);
    free(typed);
    fl_cli_kind_close(&k);
    fl_client_free(cp);
    return rc;
}

int fl_ctl_rollout_stage(int argc, char **argv)
{
    opts o = {0};
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage();
        return 0;
    }
    if (!rc && o.timeout && fl_cli_duration_ms(o.timeout) < 0)
        return fl_ctl_out_usage(o.verb, "--timeout %s: expected a duration such as 90s, 5m or 1m30s", o.timeout);
    return rc ? rc : run(&o);
}
