/* rollout_stage.c - the stages of one template's rollout, as a pure step: from the entry the
 * strategy's status holds (status.rollouts[], rollout_gate.h) and what the caches say now
 * (the template, its Works, the Clusters), the next entry and the events of the step. The
 * controller (rollout.c) writes the entry; the binding controller reads it to hold or release
 * each cluster. Because the whole state is in the entry, a restart resumes in the same stage
 * with the same clusters released, and releases nothing twice.
 *
 * A step:
 *   1. a new template generation starts a rollout from stage 1: the targets are placed in the
 *      stages (clusterSelector: the targets whose Cluster matches; percent: that share of all
 *      targets, rounded up, by name; the last stage also takes what no stage selected), every
 *      cluster Held. A rollout still running is superseded. A strategy's first sight of a
 *      template already delivered everywhere at its generation records it Completed.
 *   2. the clusters released are observed in their Works: Current (the Work at this
 *      generation applied, dispatched, its objects' live state Current and none Unhealthy
 *      by the interpreter's health rule), Failed (live state Failed,
 *      or not Current progressDeadlineSeconds after its release: an apply that failed counts
 *      only then, as a member out of reach may answer again), or still on their way. More than maxFailures Failed: Halted, or RollingBack with onFailure
 *      Rollback (the controller then restores the previous revision: rollout_restore.c).
 *   3. the current stage releases its Held clusters, maxConcurrency on their way at a time;
 *      once all are Current it soaks soakSeconds, then waits for an approval if it asks for
 *      one, then the next stage starts; after the last the rollout is Completed (every
 *      cluster released, new ones included).
 * spec.paused holds a rollout where it is (nothing more released); an abort request for the
 * generation ends it (Aborted: released clusters keep the new generation, the others stay
 * held until the template changes again). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/rollout_gate.h"
#include "controllers/rollout_priv.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/selector.h"
#include "core/strbuf.h"
#include "core/timefmt.h"
#include "core/wellknown.h"

#define DEFAULT_DEADLINE_S 600

static void note(json_t *events, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note(json_t *events, const char *type, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    json_array_append_new(events, json_pack("{s:s, s:s, s:s}", "type", type, "reason", reason, "message",
                                            msg ? msg : reason));
    free(msg);
}

static void set_str(json_t *o, const char *key, const char *v)
{
    if (v && *v)
        json_object_set_new(o, key, json_string(v));
    else
        json_object_del(o, key);
}

/* Append s to b, after ", " unless b is empty. */
static void join(fl_strbuf *b, const char *s)
{
    if (b->len)
        fl_strbuf_adds(b, ", ");
    fl_strbuf_adds(b, s ? s : "");
}

static bool is(const json_t *e, const char *phase)
{
    const char *p = fl_json_str(e, "phase");
    return p && !strcmp(p, phase);
}

static bool active(const json_t *e)
{
    return e && (is(e, FL_RO_PROGRESSING) || is(e, FL_RO_SOAKING) || is(e, FL_RO_APPROVAL) || is(e, FL_RO_PAUSED));
}

static void min_due(int64_t *due, int64_t t)
{
    if (t > 0 && (!*due || t < *due))
        *due = t;
}

/* The template generation a Work's first manifest carries, or -1. */
static json_int_t work_generation(const json_t *work)
{
    const json_t *m = json_array_get(fl_json_path(work, "spec.workload.manifests"), 0);
    const char *g = fl_json_meta_map(m, "annotations", FL_TEMPLATE_GENERATION_ANNOTATION);
    return g ? strtoll(g, NULL, 10) : -1;
}

static bool delivers(const json_t *work, json_int_t gen)
{
    return work && work_generation(work) == gen && !json_is_true(fl_json_path(work, "spec.suspendDispatching"));
}

/* A condition of the Work that is about its current generation (borrowed), or NULL. */
static const json_t *current_condition(const json_t *work, const char *type)
{
    const json_t *c = fl_condition_of(work, type);
    json_int_t g = fl_json_path_int(work, "metadata.generation", -1);
    return c && fl_json_path_int(c, "observedGeneration", -2) == g ? c : NULL;
}

/* What a released cluster's Work says about generation gen: FL_ROLLOUT_CURRENT,
 * FL_ROLLOUT_FAILED (*reason: why, borrowed), or NULL while on its way (*reason: what it
 * waits for). */
static const char *observe(const json_t *work, json_int_t gen, const char **reason)
{
    if (!delivers(work, gen)) {
        *reason = "NotDelivered";
        return NULL;
    }
    const json_t *applied = current_condition(work, "Applied"), *disp = current_condition(work, "Dispatching");
    /* the objects' own live state (not the Work's, which an apply that failed turns Failed) */
    const char *live = NULL;
    size_t i;
    json_t *ms;
    json_array_foreach(fl_json_path(work, "status.manifestStatuses"), i, ms) {
        const json_t *ls = json_object_get(ms, "liveStatus");
        const char *state = fl_json_str(ls, "state");
        if (state && !strcmp(state, "Failed")) {
            *reason = fl_json_str(ls, "reason") ? fl_json_str(ls, "reason") : "Failed";
            return FL_ROLLOUT_FAILED;
        }
        if (!live || !strcmp(live, "Current"))
            live = state ? state : "Unknown";
        const char *health = fl_json_str(ms, "health");
        if (health && !strcmp(health, "Unhealthy") && !strcmp(live, "Current"))
            live = "Unhealthy"; /* Current and healthy, or not yet */
    }
    /* not applied (yet): an apply that failed may be a member out of reach for a moment; it
     * counts as a failure only at the progress deadline */
    if (!applied || !disp || strcmp(fl_json_str(disp, "status") ? fl_json_str(disp, "status") : "", "True") ||
        strcmp(fl_json_str(applied, "status") ? fl_json_str(applied, "status") : "", "True")) {
        *reason = applied && fl_json_str(applied, "reason") ? fl_json_str(applied, "reason") : "NotApplied";
        return NULL;
    }
    if (live && !strcmp(live, "Current")) {
        *reason = NULL;
        return FL_ROLLOUT_CURRENT;
    }
    *reason = live ? live : "NoLiveState";
    return NULL;
}

/* Place the targets in the stages (see the file's comment). *empty: the first selector stage
 * that selects no target (borrowed), or NULL. */
static json_t *assign(const fl_rollout_in *in, const char **empty)
{
    const json_t *stages = fl_json_path(in->strategy, "spec.stages");
    size_t ns = json_array_size(stages), total = json_array_size(in->targets);
    json_t *taken = json_object(), *out = json_array();
    *empty = NULL;
    for (size_t s = 0; s < ns; s++) {
        const json_t *st = json_array_get(stages, s);
        const char *sname = fl_json_str(st, "name");
        const json_t *sel = json_object_get(st, "clusterSelector");
        fl_labelsel *ls = NULL;
        char *err = NULL;
        if (sel && fl_labelsel_from_json(sel, &ls, &err)) {
            free(err);
            ls = NULL;
        }
        size_t want = total, got = 0;
        if (!sel) {
            json_int_t pct = fl_json_path_int(st, "percent", 0);
            want = s + 1 == ns ? total : (size_t)((pct * (json_int_t)total + 99) / 100);
        }
        size_t i;
        json_t *t;
        json_array_foreach(in->targets, i, t) {
            const char *name = json_string_value(t);
            if (got >= want || json_object_get(taken, name))
                continue;
            if (sel) {
                const json_t *cl = json_object_get(in->clusters, name);
                if (!ls || !fl_labelsel_match(ls, fl_json_path(cl, "metadata.labels")))
                    continue;
            }
            json_object_set_new(taken, name, json_true());
            json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "name", name, "stage", sname, "state",
                                                 FL_ROLLOUT_HELD));
            got++;
        }
        fl_labelsel_free(ls);
        if (sel && !got && !*empty)
            *empty = sname;
    }
    /* what no stage selected goes with the last stage */
    size_t i;
    json_t *t;
    const char *last = fl_json_str(json_array_get(stages, ns ? ns - 1 : 0), "name");
    json_array_foreach(in->targets, i, t) if (!json_object_get(taken, json_string_value(t)))
        json_array_append_new(out, json_pack("{s:s, s:s?, s:s}", "name", json_string_value(t), "stage", last, "state",
                                             FL_ROLLOUT_HELD));
    json_decref(taken);
    return out;
}

/* "canary:1, wave:2, rest:7" */
static char *stage_counts(const json_t *stages, const json_t *clusters)
{
    fl_strbuf b = FL_STRBUF_INIT;
    size_t s, i;
    json_t *st, *c;
    json_array_foreach(stages, s, st) {
        int n = 0;
        json_array_foreach(clusters, i, c) n += fl_json_str(c, "stage") && fl_json_str(st, "name") &&
                                                !strcmp(fl_json_str(c, "stage"), fl_json_str(st, "name"));
        fl_strbuf_printf(&b, "%s%s:%d", s ? ", " : "", fl_json_str(st, "name"), n);
    }
    return fl_strbuf_take(&b);
}

static json_t *new_entry(const fl_rollout_in *in, json_int_t gen)
{
    const json_t *t = in->tmpl;
    char now[FL_TIME_BUF];
    fl_time_format(in->now_ms, false, now);
    return json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:I, s:s, s:i, s:s?, s:s, s:i}", "apiVersion",
                     fl_json_str(t, "apiVersion"), "kind", fl_json_str(t, "kind"), "namespace",
                     fl_json_meta(t, "namespace"), "name", fl_json_meta(t, "name"), "uid", fl_json_meta(t, "uid"),
                     "generation", gen, "phase", FL_RO_PROGRESSING, "stage", 0, "stageName",
                     fl_json_str(json_array_get(fl_json_path(in->strategy, "spec.stages"), 0), "name"), "startTime",
                     now, "failures", 0);
}

/* The entry's clusters follow the targets: gone ones dropped, new ones join the last stage. */
static void follow_targets(const fl_rollout_in *in, json_t *e)
{
    json_t *clusters = json_object_get(e, "clusters"), *kept = json_array(), *have = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(clusters, i, c) {
        const char *n = fl_json_str(c, "name");
        bool target = false;
        size_t j;
        json_t *t;
        json_array_foreach(in->targets, j, t) target = target || (n && !strcmp(n, json_string_value(t)));
        if (target) {
            json_array_append(kept, c);
            json_object_set_new(have, n, json_true());
        }
    }
    const json_t *stages = fl_json_path(in->strategy, "spec.stages");
    const char *last = fl_json_str(json_array_get(stages, json_array_size(stages) - 1), "name");
    bool all = json_is_true(json_object_get(e, "releaseAll"));
    json_array_foreach(in->targets, i, c) if (!json_object_get(have, json_string_value(c)))
        json_array_append_new(kept, json_pack("{s:s, s:s?, s:s}", "name", json_string_value(c), "stage", last, "state",
                                              all ? FL_ROLLOUT_RELEASED : FL_ROLLOUT_HELD));
    json_object_set_new(e, "clusters", kept);
    json_decref(have);
}

/* Everything released (Completed, RolledBack): each cluster shown Current or on its way, for
 * the status only; nothing waits on it any more. */
static void show_released(const fl_rollout_in *in, json_t *e)
{
    json_int_t gen = fl_json_path_int(e, "generation", 0);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(e, "clusters"), i, c) {
        const char *reason = NULL, *state = fl_json_str(c, "state");
        const char *now = observe(json_object_get(in->works, fl_json_str(c, "name")), gen, &reason);
        if (state && !strcmp(state, FL_ROLLOUT_FAILED))
            continue; /* what failed before the end stays said */
        json_object_set_new(c, "state", json_string(now && !strcmp(now, FL_ROLLOUT_CURRENT) ? FL_ROLLOUT_CURRENT
                                                                                          : FL_ROLLOUT_RELEASED));
    }
}

/* Step 1: the entry for the template's generation now. */
static json_t *start_or_continue(const fl_rollout_in *in, const json_t *old, json_t *events, bool *done)
{
    json_int_t gen = fl_json_path_int(in->tmpl, "metadata.generation", 0);
    const char *what = fl_json_meta(in->tmpl, "name"), *kind = fl_json_str(in->tmpl, "kind");
    *done = false;
    bool same = old && fl_json_path_int(old, "generation", 0) == gen;
    const char *why = fl_json_str(old, "reason");
    bool unplaced = same && is(old, FL_RO_HALTED) && why && !strcmp(why, "NoClusterSelected");
    if (same && !unplaced)
        return fl_json_deep_copy(old);
    /* from here: a new generation, or one whose stages selected nothing (placed again: the
     * Clusters' labels may have changed) */
    json_t *e = new_entry(in, gen);
    if (old && is(old, FL_RO_ROLLING_BACK) && gen > fl_json_path_int(old, "generation", 0)) {
        /* the restore landed: everywhere at once, so updated clusters go back and held ones
         * (which kept the previous generation) never see the failed one */
        json_object_set_new(e, "releaseAll", json_true());
        json_object_set_new(e, "phase", json_string(FL_RO_ROLLED_BACK));
        json_object_set_new(e, "rolledBackFrom", json_integer(fl_json_path_int(old, "generation", 0)));
        if (json_object_get(old, "restoredRevision"))
            json_object_set(e, "restoredRevision", json_object_get(old, "restoredRevision"));
        char *m = fl_asprintf("generation %lld failed; restored the previous revision everywhere",
                              (long long)fl_json_path_int(old, "generation", 0));
        json_object_set_new(e, "message", json_string(m));
        note(events, "Normal", "RolledBack", "%s/%s: %s", kind, what, m);
        free(m);
        *done = true;
        return e;
    }
    bool everywhere = json_array_size(in->targets) > 0;
    size_t i;
    json_t *t;
    json_array_foreach(in->targets, i, t) everywhere =
        everywhere && delivers(json_object_get(in->works, json_string_value(t)), gen);
    if ((!old || unplaced) && everywhere) { /* delivered before the strategy saw it */
        json_object_set_new(e, "releaseAll", json_true());
        json_object_set_new(e, "phase", json_string(FL_RO_COMPLETED));
        json_object_set_new(e, "message", json_string("delivered everywhere before this strategy took it over"));
        *done = true;
        return e;
    }
    if (same && json_object_get(old, "startTime")) /* placed again: the same rollout */
        json_object_set(e, "startTime", json_object_get(old, "startTime"));
    const char *empty = NULL;
    json_object_set_new(e, "clusters", assign(in, &empty));
    char *counts = stage_counts(fl_json_path(in->strategy, "spec.stages"), json_object_get(e, "clusters"));
    if (!same)
        note(events, "Normal", "RolloutStarted", "%s/%s generation %lld: %zu clusters in stages %s", kind, what,
         (long long)gen, json_array_size(in->targets), counts);
    free(counts);
    if (active(old))
        note(events, "Normal", "RolloutSuperseded", "%s/%s generation %lld supersedes generation %lld (at stage %s)",
             kind, what, (long long)gen, (long long)fl_json_path_int(old, "generation", 0),
             fl_json_str(old, "stageName") ? fl_json_str(old, "stageName") : "?");
    if (empty) {
        char *m = fl_asprintf("stage %s selects no cluster of the policy's %zu", empty, json_array_size(in->targets));
        json_object_set_new(e, "phase", json_string(FL_RO_HALTED));
        json_object_set_new(e, "reason", json_string("NoClusterSelected"));
        json_object_set_new(e, "message", json_string(m));
        if (!same)
            note(events, "Warning", "NoClusterSelected", "%s/%s: %s", kind, what, m);
        free(m);
        *done = true;
    }
    return e;
}

/* Step 2: observe the released clusters; returns how many are Failed; *first_failed names one. */
static int observe_released(const fl_rollout_in *in, json_t *e, int64_t *due, char **first_failed)
{
    json_int_t gen = fl_json_path_int(e, "generation", 0);
    json_int_t deadline_s = fl_json_path_int(in->strategy, "spec.progressDeadlineSeconds", DEFAULT_DEADLINE_S);
    int failed = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(e, "clusters"), i, c) {
        const char *state = fl_json_str(c, "state"), *name = fl_json_str(c, "name");
        if (!state || !name || !strcmp(state, FL_ROLLOUT_HELD))
            continue;
        if (strcmp(state, FL_ROLLOUT_FAILED)) { /* a failure stays counted */
            const char *reason = NULL;
            const char *now = observe(json_object_get(in->works, name), gen, &reason);
            int64_t since = fl_time_parse(fl_json_str(c, "since") ? fl_json_str(c, "since") : "");
            if (!now && !strcmp(state, FL_ROLLOUT_RELEASED) && deadline_s > 0 && since > 0) {
                if (in->now_ms >= since + deadline_s * 1000) {
                    now = FL_ROLLOUT_FAILED;
                    reason = "ProgressDeadlineExceeded";
                } else {
                    min_due(due, since + deadline_s * 1000);
                }
            }
            /* Current once stays Current until its object fails: a Work rewritten for another
             * reason (an override), or a member out of reach, is not a step back */
            if (now)
                json_object_set_new(c, "state", json_string(now));
            set_str(c, "reason", reason && !strcmp(now ? now : "", FL_ROLLOUT_FAILED) ? reason : NULL);
        }
        if (!strcmp(fl_json_str(c, "state"), FL_ROLLOUT_FAILED)) {
            if (!failed++ && first_failed)
                *first_failed = fl_asprintf("%s (%s)", name,
                                            fl_json_str(c, "reason") ? fl_json_str(c, "reason") : "Failed");
        }
    }
    json_object_set_new(e, "failures", json_integer(failed));
    return failed;
}

/* Step 3 for the current stage; returns true when the stage is over and the next may start. */
static bool stage_step(const fl_rollout_in *in, json_t *e, const json_t *old, json_t *events, int64_t *due)
{
    const json_t *stages = fl_json_path(in->strategy, "spec.stages");
    json_int_t si = fl_json_path_int(e, "stage", 0);
    const json_t *st = json_array_get(stages, (size_t)si);
    const char *sname = fl_json_str(st, "name"), *what = fl_json_meta(in->tmpl, "name");
    json_int_t maxc = fl_json_path_int(st, "maxConcurrency", 0);
    int held = 0, inflight = 0, total = 0, current = 0;
    fl_strbuf released = FL_STRBUF_INIT, waiting = FL_STRBUF_INIT;
    char now[FL_TIME_BUF];
    fl_time_format(in->now_ms, false, now);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(e, "clusters"), i, c) {
        const char *cs = fl_json_str(c, "stage"), *state = fl_json_str(c, "state");
        if (!cs || !sname || strcmp(cs, sname))
            continue;
        total++;
        if (!strcmp(state, FL_ROLLOUT_HELD) && (maxc <= 0 || inflight < maxc)) {
            json_object_set_new(c, "state", json_string(FL_ROLLOUT_RELEASED));
            json_object_set_new(c, "since", json_string(now));
            join(&released, fl_json_str(c, "name"));
            state = FL_ROLLOUT_RELEASED;
        }
        if (!strcmp(state, FL_ROLLOUT_HELD))
            held++;
        else if (!strcmp(state, FL_ROLLOUT_RELEASED)) {
            inflight++;
            join(&waiting, fl_json_str(c, "name"));
        } else if (!strcmp(state, FL_ROLLOUT_CURRENT))
            current++;
    }
    if (released.len)
        note(events, "Normal", "ClustersReleased", "%s: stage %s released %s", what, sname, fl_strbuf_str(&released));
    fl_strbuf_close(&released);
    if (held || inflight) {
        char *w = fl_asprintf("stage %s: %d/%d clusters Current; waiting for %s%s", sname, current, total,
                              waiting.len ? fl_strbuf_str(&waiting) : "the next release", held ? " (more held)" : "");
        json_object_set_new(e, "phase", json_string(FL_RO_PROGRESSING));
        json_object_set_new(e, "waitingFor", json_string(w));
        free(w);
        fl_strbuf_close(&waiting);
        return false;
    }
    fl_strbuf_close(&waiting);
    json_int_t soak = fl_json_path_int(st, "soakSeconds", 0);
    if (soak > 0) {
        int64_t until = fl_time_parse(fl_json_str(e, "soakUntil") ? fl_json_str(e, "soakUntil") : "");
        if (until <= 0) {
            until = in->now_ms + soak * 1000;
            char u[FL_TIME_BUF];
            fl_time_format(until, false, u);
            json_object_set_new(e, "soakUntil", json_string(u));
            note(events, "Normal", "StageSoaking", "%s: stage %s Current on %d clusters; soaking %llds", what, sname,
                 total, (long long)soak);
        }
        if (in->now_ms < until) {
            char *w = fl_asprintf("stage %s: soaking until %s", sname, fl_json_str(e, "soakUntil"));
            json_object_set_new(e, "phase", json_string(FL_RO_SOAKING));
            json_object_set_new(e, "waitingFor", json_string(w));
            free(w);
            min_due(due, until);
            return false;
        }
    }
    if (json_is_true(json_object_get(st, "approval"))) {
        char *key = fl_cat(FL_RO_APPROVE_PREFIX, fl_json_str(e, "uid") ? fl_json_str(e, "uid") : "", NULL);
        char *want = fl_asprintf("%lld/%s", (long long)fl_json_path_int(e, "generation", 0), sname);
        const char *have = fl_json_meta_map(in->strategy, "annotations", key);
        bool approved = have && !strcmp(have, want);
        free(key);
        free(want);
        if (!approved) {
            char *w = fl_asprintf("stage %s: approval (flotilla ctl rollout approve %s/%s)", sname,
                                  fl_json_str(in->tmpl, "kind"), what);
            if (!is(old, FL_RO_APPROVAL) || fl_json_path_int(old, "stage", -1) != si)
                note(events, "Normal", "WaitingForApproval", "%s: %s", what, w);
            json_object_set_new(e, "phase", json_string(FL_RO_APPROVAL));
            json_object_set_new(e, "waitingFor", json_string(w));
            free(w);
            return false;
        }
    }
    note(events, "Normal", "StageCompleted", "%s: stage %s Current on %d clusters", what, sname, total);
    return true;
}

json_t *fl_rollout_advance(const fl_rollout_in *in, const json_t *old, json_t *events, int64_t *due_ms)
{
    bool done = false;
    json_t *e = start_or_continue(in, old, events, &done);
    const char *what = fl_json_meta(in->tmpl, "name");
    if (!done)
        follow_targets(in, e);
    if (!done && json_is_true(json_object_get(e, "releaseAll")))
        show_released(in, e);
    if (done || !(active(e)))
        return e;
    json_int_t gen = fl_json_path_int(e, "generation", 0);
    char *akey = fl_cat(FL_RO_ABORT_PREFIX, fl_json_str(e, "uid") ? fl_json_str(e, "uid") : "", NULL);
    const char *abort_gen = fl_json_meta_map(in->strategy, "annotations", akey);
    free(akey);
    if (abort_gen && strtoll(abort_gen, NULL, 10) == gen) {
        json_object_set_new(e, "phase", json_string(FL_RO_ABORTED));
        json_object_set_new(e, "message", json_string("aborted: released clusters keep this generation, the others "
                                                      "stay held until the template changes"));
        json_object_del(e, "waitingFor");
        note(events, "Warning", "RolloutAborted", "%s: generation %lld aborted at stage %s", what, (long long)gen,
             fl_json_str(e, "stageName"));
        return e;
    }
    if (json_is_true(fl_json_path(in->strategy, "spec.paused"))) {
        if (!is(e, FL_RO_PAUSED))
            note(events, "Normal", "RolloutPaused", "%s: paused at stage %s", what, fl_json_str(e, "stageName"));
        json_object_set_new(e, "phase", json_string(FL_RO_PAUSED));
        json_object_set_new(e, "waitingFor", json_string("resume (spec.paused is true)"));
        return e;
    }
    if (is(e, FL_RO_PAUSED)) {
        note(events, "Normal", "RolloutResumed", "%s: resumed at stage %s", what, fl_json_str(e, "stageName"));
        json_object_set_new(e, "phase", json_string(FL_RO_PROGRESSING));
    }
    char *failed = NULL;
    int failures = observe_released(in, e, due_ms, &failed);
    if (failures > fl_json_path_int(in->strategy, "spec.maxFailures", 0)) {
        const char *on = fl_json_path_str(in->strategy, "spec.onFailure");
        bool rollback = on && !strcmp(on, "Rollback");
        char *m = fl_asprintf("%d cluster%s failed (first: %s) at stage %s%s", failures, failures == 1 ? "" : "s",
                              failed, fl_json_str(e, "stageName"), rollback ? "; rolling back" : "; halted");
        json_object_set_new(e, "phase", json_string(rollback ? FL_RO_ROLLING_BACK : FL_RO_HALTED));
        json_object_set_new(e, "reason", json_string("ClusterFailed"));
        json_object_set_new(e, "message", json_string(m));
        json_object_del(e, "waitingFor");
        note(events, "Warning", rollback ? "RollingBack" : "RolloutHalted", "%s generation %lld: %s", what,
             (long long)gen, m);
        free(m);
        free(failed);
        return e;
    }
    free(failed);
    const json_t *stages = fl_json_path(in->strategy, "spec.stages");
    for (size_t guard = 0; guard <= json_array_size(stages); guard++) {
        if (!stage_step(in, e, old, events, due_ms))
            break;
        json_int_t next = fl_json_path_int(e, "stage", 0) + 1;
        json_object_del(e, "soakUntil");
        if ((size_t)next >= json_array_size(stages)) {
            json_object_set_new(e, "phase", json_string(FL_RO_COMPLETED));
            json_object_set_new(e, "releaseAll", json_true());
            json_object_del(e, "waitingFor");
            note(events, "Normal", "RolloutCompleted", "%s: generation %lld Current on every cluster", what,
                 (long long)gen);
            break;
        }
        json_object_set_new(e, "stage", json_integer(next));
        json_object_set_new(e, "stageName", json_string(fl_json_str(json_array_get(stages, (size_t)next), "name")));
    }
    return e;
}
