/* livestate.c - the live state of a member object (livestate.h): kstatus's rules.
 *
 * The order is kstatus's. First what holds for every kind: an object being deleted is
 * Terminating; one whose controller has not seen its latest spec (status.observedGeneration,
 * when the kind reports one, behind metadata.generation) is InProgress; one that says so
 * itself with kstatus's own conditions (Reconciling=True, Stalled=True) is InProgress or
 * Failed. Then one rule per built-in kind that reports progress in its own fields
 * (Deployment, StatefulSet, DaemonSet, ReplicaSet, Pod, Job, PVC, Service, CRD); kinds
 * with nothing to wait for (ConfigMap, Secret, CronJob, PodDisruptionBudget) are Current.
 * Any other kind is judged by its health rule when a customization or bundled script
 * gives it one (the interpreter knows that kind better than a generic rule), else by a
 * Ready condition, else it is Current.
 *
 * Where Flotilla differs from kstatus, on purpose: a Pod whose phase is Failed is Failed
 * (kstatus calls it Current, "completed"), a CrashLoopBackOff counts in any phase but the
 * final ones; a Job is InProgress until Complete (kstatus: Current once started); a
 * LoadBalancer Service waits for status.loadBalancer.ingress (kstatus: spec.clusterIP);
 * other kinds' Ready condition counts. docs/status.md has the table users read.
 *
 * Messages say what is missing in counts ("2 of 3 replicas updated"), never a time, so an
 * object that did not move is judged the same every time. */
#include "interp/livestate.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json_get.h"
#include "core/timefmt.h"

/* ---- reading the object ---- */

/* An integer at a dotted path, or def when absent or not an integer. */
static json_int_t num(const json_t *obj, const char *path, json_int_t def)
{
    return fl_json_path_int(obj, path, def);
}

/* The condition of type in status.conditions, or NULL. */
static const json_t *cond(const json_t *obj, const char *type)
{
    const json_t *conds = fl_json_path(obj, "status.conditions");
    size_t i;
    const json_t *c;
    if (!json_is_array(conds))
        return NULL;
    json_array_foreach(conds, i, c) {
        const char *t = fl_json_str(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

/* Whether the condition c has status st ("True", "False", "Unknown"). */
static bool cond_is(const json_t *c, const char *st)
{
    const char *s = fl_json_str(c, "status");
    return s && !strcmp(s, st);
}

static const char *cond_reason(const json_t *c, const char *def)
{
    const char *r = fl_json_str(c, "reason");
    return r && *r ? r : def;
}

/* ---- writing the verdict ---- */

/* The length of s's first n bytes less a multibyte UTF-8 character cut at the end. */
static size_t utf8_whole(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) /* continuation bytes */
        i--;
    if (i == 0 || (unsigned char)s[i - 1] < 0x80)
        return n; /* ends in ASCII */
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    return n - (i - 1) >= need ? n : i - 1;
}

/* Copy text into a bounded field, on one line (control characters become spaces), cut at a
 * character boundary with "..." when it does not fit: a condition's message, an error. */
static void put_text(char *dst, size_t cap, const char *text)
{
    size_t len = text ? strlen(text) : 0;
    bool cut = len >= cap;
    if (cut)
        len = utf8_whole(text, cap - 4);
    for (size_t i = 0; i < len; i++)
        dst[i] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? ' ' : text[i];
    strcpy(dst + len, cut ? "..." : "");
}

static void verdict(fl_live *out, enum fl_live_state st, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void verdict(fl_live *out, enum fl_live_state st, const char *reason, const char *fmt, ...)
{
    out->state = st;
    put_text(out->reason, sizeof out->reason, reason);
    out->message[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(out->message, sizeof out->message, fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof out->message) /* a long name in it: not half a character */
            out->message[utf8_whole(out->message, sizeof out->message - 1)] = '\0';
    }
}

/* A verdict whose message is the object's own text (a condition's message). */
static void verdict_text(fl_live *out, enum fl_live_state st, const char *reason, const char *text)
{
    verdict(out, st, reason, NULL);
    put_text(out->message, sizeof out->message, text);
}

/* ---- the generic rules ---- */

/* Terminating, an unobserved generation, Reconciling or Stalled: true when one decided. */
static bool generic(const json_t *obj, fl_live *out)
{
    const char *del = fl_json_path_str(obj, "metadata.deletionTimestamp");
    if (del && *del) {
        verdict(out, FL_LIVE_TERMINATING, "DeletionTimestampSet", "scheduled for deletion");
        return true;
    }
    const json_t *gen = fl_json_path(obj, "metadata.generation");
    const json_t *seen = fl_json_path(obj, "status.observedGeneration");
    if (json_is_integer(gen) && json_is_integer(seen) && json_integer_value(gen) != json_integer_value(seen)) {
        verdict(out, FL_LIVE_IN_PROGRESS, "ObservedGenerationOld", "generation %lld, observed %lld",
                (long long)json_integer_value(gen), (long long)json_integer_value(seen));
        return true;
    }
    const json_t *c = cond(obj, "Reconciling");
    if (cond_is(c, "True")) {
        verdict_text(out, FL_LIVE_IN_PROGRESS, cond_reason(c, "Reconciling"), fl_json_str(c, "message"));
        return true;
    }
    c = cond(obj, "Stalled");
    if (cond_is(c, "True")) {
        verdict_text(out, FL_LIVE_FAILED, cond_reason(c, "Stalled"), fl_json_str(c, "message"));
        return true;
    }
    return false;
}

/* ---- one rule per built-in kind ---- */

static void current(fl_live *out)
{
    verdict(out, FL_LIVE_CURRENT, NULL, NULL);
}

/* "want > have": InProgress with reason and "have of want replicas <what>". */
static bool short_of(fl_live *out, json_int_t have, json_int_t want, const char *reason, const char *what)
{
    if (want <= have)
        return false;
    verdict(out, FL_LIVE_IN_PROGRESS, reason, "%lld of %lld replicas %s", (long long)have, (long long)want, what);
    return true;
}

/* More pods than asked for: the old ones are still terminating. */
static bool extra(fl_live *out, json_int_t have, json_int_t want)
{
    if (have <= want)
        return false;
    verdict(out, FL_LIVE_IN_PROGRESS, "ExtraPods", "%lld old replicas terminating", (long long)(have - want));
    return true;
}

static void deployment(const json_t *obj, fl_live *out)
{
    const json_t *prog = cond(obj, "Progressing");
    if (prog && !strcmp(cond_reason(prog, ""), "ProgressDeadlineExceeded")) {
        verdict_text(out, FL_LIVE_FAILED, "ProgressDeadlineExceeded", fl_json_str(prog, "message"));
        return;
    }
    json_int_t want = num(obj, "spec.replicas", 1), have = num(obj, "status.replicas", 0);
    json_int_t updated = num(obj, "status.updatedReplicas", 0), ready = num(obj, "status.readyReplicas", 0);
    json_int_t avail = num(obj, "status.availableReplicas", 0);
    if (short_of(out, have, want, "LessReplicas", "created") ||
        short_of(out, updated, want, "LessUpdated", "updated") || extra(out, have, want) || short_of(out, avail, updated, "LessAvailable", "available") ||
        short_of(out, ready, want, "LessReady", "ready"))
        return;
    /* without a progress deadline the controller writes no Progressing condition */
    bool deadline = json_is_integer(fl_json_path(obj, "spec.progressDeadlineSeconds")) &&
                    num(obj, "spec.progressDeadlineSeconds", 0) != 2147483647;
    if (deadline && !(cond_is(prog, "True") && !strcmp(cond_reason(prog, ""), "NewReplicaSetAvailable"))) {
        verdict(out, FL_LIVE_IN_PROGRESS, "ReplicaSetNotAvailable", "the new ReplicaSet is not available yet");
        return;
    }
    if (!cond_is(cond(obj, "Available"), "True")) {
        verdict(out, FL_LIVE_IN_PROGRESS, "DeploymentNotAvailable", "the Deployment is not Available yet");
        return;
    }
    current(out);
}

static void statefulset(const json_t *obj, fl_live *out)
{
    const char *strategy = fl_json_path_str(obj, "spec.updateStrategy.type");
    if (strategy && !strcmp(strategy, "OnDelete")) {
        current(out); /* the user rolls it out by deleting pods: nothing to wait for */
        return;
    }
    json_int_t want = num(obj, "spec.replicas", 1), have = num(obj, "status.replicas", 0);
    json_int_t ready = num(obj, "status.readyReplicas", 0), cur = num(obj, "status.currentReplicas", 0);
    json_int_t updated = num(obj, "status.updatedReplicas", 0);
    json_int_t partition = num(obj, "spec.updateStrategy.rollingUpdate.partition", -1);
    if (short_of(out, have, want, "LessReplicas", "created") || short_of(out, ready, want, "LessReady", "ready") ||
        extra(out, have, want))
        return;
    if (partition >= 0) {
        /* a partitioned rollout is done when the ordinals at or above the partition are */
        json_int_t part = want - partition < 0 ? 0 : want - partition;
        if (!short_of(out, updated, part, "PartitionRollout", "updated above the partition"))
            current(out);
        return;
    }
    if (short_of(out, cur, want, "LessCurrent", "at the current revision"))
        return;
    const char *crev = fl_json_path_str(obj, "status.currentRevision");
    const char *urev = fl_json_path_str(obj, "status.updateRevision");
    if (strcmp(crev ? crev : "", urev ? urev : "")) {
        verdict(out, FL_LIVE_IN_PROGRESS, "RevisionMismatch", "the update revision is not the current one yet");
        return;
    }
    current(out);
}

static void daemonset(const json_t *obj, fl_live *out)
{
    /* its controller always writes both: without them it has not looked yet */
    if (!json_is_integer(fl_json_path(obj, "metadata.generation")) ||
        !json_is_integer(fl_json_path(obj, "status.observedGeneration"))) {
        verdict(out, FL_LIVE_IN_PROGRESS, "NoObservedGeneration", "the controller has not observed it yet");
        return;
    }
    json_int_t want = num(obj, "status.desiredNumberScheduled", -1);
    if (want < 0) {
        verdict(out, FL_LIVE_IN_PROGRESS, "NoDesiredNumber", "no desiredNumberScheduled yet");
        return;
    }
    if (short_of(out, num(obj, "status.currentNumberScheduled", 0), want, "LessCurrent", "scheduled") ||
        short_of(out, num(obj, "status.updatedNumberScheduled", 0), want, "LessUpdated", "updated") ||
        short_of(out, num(obj, "status.numberAvailable", 0), want, "LessAvailable", "available") ||
        short_of(out, num(obj, "status.numberReady", 0), want, "LessReady", "ready"))
        return;
    current(out);
}

static void replicaset(const json_t *obj, fl_live *out)
{
    const json_t *rf = cond(obj, "ReplicaFailure");
    if (cond_is(rf, "True")) {
        verdict_text(out, FL_LIVE_IN_PROGRESS, "ReplicaFailure", fl_json_str(rf, "message"));
        return;
    }
    json_int_t want = num(obj, "spec.replicas", 1);
    if (short_of(out, num(obj, "status.fullyLabeledReplicas", 0), want, "LessLabelled", "labelled") ||
        short_of(out, num(obj, "status.availableReplicas", 0), want, "LessAvailable", "available") ||
        short_of(out, num(obj, "status.readyReplicas", 0), want, "LessReady", "ready") ||
        extra(out, num(obj, "status.replicas", 0), want))
        return;
    current(out);
}

/* The first container (init containers too) waiting in CrashLoopBackOff, or NULL. */
static const char *crash_looping(const json_t *obj)
{
    static const char *const lists[] = {"status.initContainerStatuses", "status.containerStatuses"};
    for (size_t l = 0; l < 2; l++) {
        const json_t *arr = fl_json_path(obj, lists[l]);
        size_t i;
        const json_t *cs;
        if (!json_is_array(arr))
            continue;
        json_array_foreach(arr, i, cs) {
            const char *why = fl_json_path_str(cs, "state.waiting.reason");
            if (why && !strcmp(why, "CrashLoopBackOff"))
                return fl_json_str(cs, "name") ? fl_json_str(cs, "name") : "";
        }
    }
    return NULL;
}

/* the one reason that time alone changes (fl_live_reason_ages) */
#define NOT_SCHEDULED "PodNotScheduled"

static void pod(const json_t *obj, int64_t now_ms, fl_live *out)
{
    const char *phase = fl_json_path_str(obj, "status.phase");
    if (phase && !strcmp(phase, "Succeeded")) {
        current(out);
        return;
    }
    if (phase && !strcmp(phase, "Failed")) {
        verdict_text(out, FL_LIVE_FAILED, "PodFailed", fl_json_path_str(obj, "status.reason"));
        return;
    }
    const char *crash = crash_looping(obj);
    if (crash) {
        verdict(out, FL_LIVE_FAILED, "CrashLoopBackOff", "container %.100s is in CrashLoopBackOff", crash);
        return;
    }
    if (!phase || !*phase) {
        verdict(out, FL_LIVE_IN_PROGRESS, "PodNotObserved", "no phase yet");
        return;
    }
    if (!strcmp(phase, "Running")) {
        if (cond_is(cond(obj, "Ready"), "True"))
            current(out);
        else
            verdict(out, FL_LIVE_IN_PROGRESS, "PodRunningNotReady", "running but not Ready");
        return;
    }
    if (!strcmp(phase, "Pending")) {
        const json_t *sc = cond(obj, "PodScheduled");
        if (cond_is(sc, "False") && !strcmp(cond_reason(sc, ""), "Unschedulable")) {
            /* a while to find a node first; kstatus counts from the Pod's creation */
            int64_t since = fl_time_parse(fl_json_path_str(obj, "metadata.creationTimestamp"));
            if (since < 0)
                since = fl_time_parse(fl_json_str(sc, "lastTransitionTime"));
            if (since >= 0 && now_ms - since >= FL_LIVE_UNSCHEDULABLE_MS)
                verdict_text(out, FL_LIVE_FAILED, "PodUnschedulable", fl_json_str(sc, "message"));
            else
                verdict(out, FL_LIVE_IN_PROGRESS, NOT_SCHEDULED, "not scheduled yet");
            return;
        }
        verdict(out, FL_LIVE_IN_PROGRESS, "PodPending", "Pending");
        return;
    }
    verdict(out, FL_LIVE_UNKNOWN, "UnknownPhase", "phase %.100s", phase);
}

static void job(const json_t *obj, fl_live *out)
{
    json_int_t par = num(obj, "spec.parallelism", 1), completions = num(obj, "spec.completions", par);
    const json_t *c = cond(obj, "Failed");
    if (cond_is(c, "True")) {
        verdict_text(out, FL_LIVE_FAILED, cond_reason(c, "JobFailed"), fl_json_str(c, "message"));
        return;
    }
    if (cond_is(cond(obj, "Complete"), "True") || cond_is(cond(obj, "Suspended"), "True")) {
        current(out);
        return;
    }
    if (!fl_json_path_str(obj, "status.startTime")) {
        verdict(out, FL_LIVE_IN_PROGRESS, "JobNotStarted", "not started yet");
        return;
    }
    verdict(out, FL_LIVE_IN_PROGRESS, "JobRunning", "%lld of %lld completions succeeded",
            (long long)num(obj, "status.succeeded", 0), (long long)completions);
}

static void pvc(const json_t *obj, fl_live *out)
{
    const char *phase = fl_json_path_str(obj, "status.phase");
    if (phase && !strcmp(phase, "Bound"))
        current(out);
    else
        verdict(out, FL_LIVE_IN_PROGRESS, "NotBound", "phase %.100s", phase ? phase : "unknown");
}

static void service(const json_t *obj, fl_live *out)
{
    const char *type = fl_json_path_str(obj, "spec.type");
    const json_t *ingress = fl_json_path(obj, "status.loadBalancer");
    ingress = json_object_get(ingress, "ingress");
    if (type && !strcmp(type, "LoadBalancer") && !json_array_size(ingress))
        verdict(out, FL_LIVE_IN_PROGRESS, "NoIPAssigned", "waiting for the load balancer's ingress");
    else
        current(out);
}

static void crd(const json_t *obj, fl_live *out)
{
    const json_t *names = cond(obj, "NamesAccepted"), *est = cond(obj, "Established");
    if (cond_is(names, "False")) {
        verdict_text(out, FL_LIVE_FAILED, cond_reason(names, "NamesNotAccepted"), fl_json_str(names, "message"));
        return;
    }
    if (cond_is(est, "True")) {
        current(out);
        return;
    }
    if (cond_is(est, "False") && strcmp(cond_reason(est, ""), "Installing")) {
        verdict_text(out, FL_LIVE_FAILED, cond_reason(est, "NotEstablished"), fl_json_str(est, "message"));
        return;
    }
    verdict(out, FL_LIVE_IN_PROGRESS, "Installing", "not Established yet");
}

static void always_current(const json_t *obj, fl_live *out)
{
    (void)obj;
    current(out);
}

/* Other kinds: a Ready condition if they have one; no conditions at all is Current. */
static void ready_condition(const json_t *obj, fl_live *out)
{
    const json_t *c = cond(obj, "Ready");
    if (!c || cond_is(c, "True")) {
        current(out);
        return;
    }
    verdict_text(out, FL_LIVE_IN_PROGRESS, cond_reason(c, "NotReady"), fl_json_str(c, "message"));
}

/* The rules by (group, kind); Pod's takes the clock and is called apart. */
static const struct {
    const char *group, *kind;
    void (*fn)(const json_t *obj, fl_live *out);
} KINDS[] = {
    {"apps", "Deployment", deployment},
    {"extensions", "Deployment", deployment},
    {"apps", "StatefulSet", statefulset},
    {"apps", "DaemonSet", daemonset},
    {"extensions", "DaemonSet", daemonset},
    {"apps", "ReplicaSet", replicaset},
    {"extensions", "ReplicaSet", replicaset},
    {"batch", "Job", job},
    {"", "PersistentVolumeClaim", pvc},
    {"", "Service", service},
    {"apiextensions.k8s.io", "CustomResourceDefinition", crd},
    {"", "ConfigMap", always_current},
    {"", "Secret", always_current},
    {"batch", "CronJob", always_current},
    {"policy", "PodDisruptionBudget", always_current},
};

/* The rule of a built-in kind; false for other kinds (out untouched). */
static bool builtin(const json_t *obj, const char *api_version, const char *kind, int64_t now_ms, fl_live *out)
{
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    if (!glen && !strcmp(kind, "Pod")) {
        pod(obj, now_ms, out);
        return true;
    }
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++)
        if (!strcmp(KINDS[i].kind, kind) && strlen(KINDS[i].group) == glen &&
            !strncmp(KINDS[i].group, api_version, glen)) {
            KINDS[i].fn(obj, out);
            return true;
        }
    return false;
}

/* ---- the verdict ---- */

void fl_live_judge(const json_t *obj, const char *api_version, const char *kind, const fl_live_health *custom,
                   int64_t now_ms, fl_live *out)
{
    memset(out, 0, sizeof *out);
    if (!obj) {
        verdict(out, FL_LIVE_NOT_FOUND, NULL, "not in the member cluster");
        return;
    }
    if (!json_is_object(obj) || !api_version || !kind) {
        verdict(out, FL_LIVE_UNKNOWN, "NotAnObject", "the member object cannot be read");
        return;
    }
    if (generic(obj, out))
        return;
    if (custom) {
        if (custom->rc) {
            verdict_text(out, FL_LIVE_UNKNOWN, "InterpretHealthFailed",
                         custom->err ? custom->err : fl_strerror(custom->rc));
            return;
        }
        if (custom->health == FL_HEALTH_HEALTHY) {
            current(out);
            return;
        }
        if (custom->health == FL_HEALTH_UNKNOWN) {
            verdict(out, FL_LIVE_UNKNOWN, "HealthUnknown", "the kind's health rule cannot tell");
            return;
        }
        /* Unhealthy is on its way, unless a built-in rule knows it is stuck for good */
        fl_live kind_says;
        if (builtin(obj, api_version, kind, now_ms, &kind_says) && kind_says.state == FL_LIVE_FAILED) {
            *out = kind_says;
            return;
        }
        verdict(out, FL_LIVE_IN_PROGRESS, "Unhealthy", "the kind's health rule says Unhealthy");
        return;
    }
    if (!builtin(obj, api_version, kind, now_ms, out))
        ready_condition(obj, out);
}

void fl_live_of(fl_interp *ip, const json_t *obj, const char *api_version, const char *kind, fl_live *out)
{
    fl_live_health h = {0};
    char *err = NULL;
    bool custom = ip && obj && api_version && kind && fl_interp_has(ip, api_version, kind, FL_INTERP_HEALTH) &&
                  !fl_interp_native_first(ip, api_version, kind, FL_INTERP_HEALTH);
    if (custom) {
        h.rc = fl_interp_health(ip, obj, &h.health, &err);
        h.err = err;
        /* the rule went away meanwhile: the built-in rules judge */
        custom = h.rc != FL_EUNSUPPORTED;
    }
    fl_live_judge(obj, api_version, kind, custom ? &h : NULL, fl_time_now_ms(), out);
    free(err);
}

bool fl_live_reason_ages(const char *reason)
{
    return reason && !strcmp(reason, NOT_SCHEDULED);
}

const char *fl_live_state_name(enum fl_live_state s)
{
    switch (s) {
    case FL_LIVE_CURRENT:
        return "Current";
    case FL_LIVE_IN_PROGRESS:
        return "InProgress";
    case FL_LIVE_FAILED:
        return "Failed";
    case FL_LIVE_TERMINATING:
        return "Terminating";
    case FL_LIVE_NOT_FOUND:
        return "NotFound";
    case FL_LIVE_UNKNOWN:
        break;
    }
    return "Unknown";
}

enum fl_live_state fl_live_state_parse(const char *name)
{
    for (int s = FL_LIVE_CURRENT; s <= FL_LIVE_NOT_FOUND; s++)
        if (name && !strcmp(name, fl_live_state_name((enum fl_live_state)s)))
            return (enum fl_live_state)s;
    return FL_LIVE_UNKNOWN;
}
