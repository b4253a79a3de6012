/* sim_status.c - the workload simulator's status for each kind: what a real cluster's
 * controllers and kubelets would report now for a Deployment, ReplicaSet, StatefulSet,
 * DaemonSet, Job or Pod, and when the object next needs a look.
 *
 * A status is a function of the object, the time and the cluster's Nodes: replicas become
 * ready at the configured rate from when the shortfall was first seen (the object's
 * record, sim.c), a Job completes a while after it started, a Pod is bound to a node that
 * matches its nodeSelector and runs there; an image that never pulls (fl_sim_image_is_fake)
 * keeps its workload from any ready replica. Timestamps are kept from the stored status
 * while the state they describe holds, so evaluating an object that did not move computes
 * the status it has, and the caller (eval_key in sim.c) writes nothing. Runs on the
 * simulator's thread (sim_priv.h). */
#include "member/sim_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/mem.h"

/* RFC 3339 ("2024-05-01T10:00:00Z", fractional seconds and offsets tolerated as Z) to
 * seconds since the epoch; -1 if unparsable. */
static time_t parse_time(const char *s)
{
    if (!s)
        return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return -1;
    return timegm(&tm);
}

/* A pod-template-hash-like suffix: 10 characters from Kubernetes' safe alphabet. */
static void template_hash(const json_t *tmpl, char out[11])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    size_t len;
    char *s = fl_json_dumps(tmpl ? tmpl : json_null(), &len);
    uint64_t h = ((uint64_t)fnv1a(s, len) << 32) | fnv1a(s, len / 2);
    free(s);
    for (int i = 0; i < 10; i++) {
        out[i] = alphabet[h % (sizeof alphabet - 1)];
        h /= sizeof alphabet - 1;
    }
    out[10] = 0;
}

static const char *str_or(const char *s, const char *dflt)
{
    return s ? s : dflt;
}

/* Set an integer field that Kubernetes marks omitempty: absent when zero. */
static void set_nz(json_t *o, const char *k, json_int_t v)
{
    if (v)
        json_object_set_new(o, k, json_integer(v));
}

static void want_due(sim_eval *x, int64_t due)
{
    if (due > 0 && (x->due == 0 || due < x->due))
        x->due = due;
}

/* Ready replicas now for a workload aiming at `target` whose status says `stored` are
 * ready. Shrinking is immediate; growth runs at ready_per_second from the moment we first
 * saw the shortfall (or the target changed), and schedules the next step. */
static int32_t grow(sim_eval *x, int32_t stored, int32_t target)
{
    double rate = x->s->cfg.ready_per_second;
    if (stored >= target || rate < 0)
        return target;
    sim_obj *o = fl_sim_obj_get(x->c, x->key);
    if (!o->growing || o->target != target || stored < o->base) {
        o->growing = true;
        o->base = stored;
        o->target = target;
        o->since = x->now;
    }
    int64_t n = o->base + (int64_t)floor((double)(x->now - o->since) * rate / 1000.0);
    if (n >= target) {
        o->growing = false;
        return target;
    }
    if (n < stored)
        n = stored;
    /* the next replica's time, but at most one write per object per tick: at high rates a
     * step covers several replicas (the count comes from elapsed time, not from steps) */
    int64_t next = o->since + (int64_t)ceil((double)(n + 1 - o->base) * 1000.0 / rate);
    if (next < x->now + x->s->cfg.tick_ms)
        next = x->now + x->s->cfg.tick_ms;
    want_due(x, next);
    return (int32_t)n;
}

enum { COND_DEPLOY, COND_POD, COND_JOB };

/* A condition, keeping lastTransitionTime while status holds and the other timestamps
 * while status, reason and message hold (and, for Deployments, no progress was made). */
static json_t *mk_cond(const json_t *old_conds, int style, const char *type, const char *status, const char *reason,
                       const char *message, const char *now, bool progress)
{
    const json_t *old = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(old_conds, i, c) if (!strcmp(jstr_or(c, "type", ""), type)) old = c;
    bool same_status = old && !strcmp(jstr_or(old, "status", ""), status);
    bool same = same_status && !strcmp(jstr_or(old, "reason", ""), str_or(reason, "")) &&
                !strcmp(jstr_or(old, "message", ""), str_or(message, ""));
    const char *ltt = same_status && fl_json_path_str(old, "lastTransitionTime") ? fl_json_path_str(old, "lastTransitionTime") : now;
    json_t *out = json_object();
    json_object_set_new(out, "type", json_string(type));
    json_object_set_new(out, "status", json_string(status));
    if (style == COND_DEPLOY) {
        const char *lut = same && !progress && fl_json_path_str(old, "lastUpdateTime") ? fl_json_path_str(old, "lastUpdateTime") : now;
        json_object_set_new(out, "lastUpdateTime", json_string(lut));
    } else if (style == COND_POD) {
        json_object_set_new(out, "lastProbeTime", json_null());
    } else {
        const char *lpt = same && fl_json_path_str(old, "lastProbeTime") ? fl_json_path_str(old, "lastProbeTime") : now;
        json_object_set_new(out, "lastProbeTime", json_string(lpt));
    }
    json_object_set_new(out, "lastTransitionTime", json_string(ltt));
    if (reason)
        json_object_set_new(out, "reason", json_string(reason));
    if (message)
        json_object_set_new(out, "message", json_string(message));
    return out;
}

/* Deployment's maxUnavailable resolved against replicas, as the deployment controller does. */
static int32_t max_unavailable(const json_t *spec, int32_t replicas)
{
    const json_t *strat = json_object_get(spec, "strategy");
    const char *type = fl_json_path_str(strat, "type");
    if (type && !strcmp(type, "Recreate"))
        return 0;
    const json_t *ru = json_object_get(strat, "rollingUpdate");
    json_int_t mu = 0, ms = 0;
    const json_t *vals[2] = {json_object_get(ru, "maxUnavailable"), json_object_get(ru, "maxSurge")};
    const char *dflt[2] = {"25%", "25%"};
    json_int_t *outs[2] = {&mu, &ms};
    for (int i = 0; i < 2; i++) {
        const json_t *v = vals[i];
        if (json_is_integer(v)) {
            *outs[i] = json_integer_value(v);
            continue;
        }
        const char *str = json_is_string(v) ? json_string_value(v) : dflt[i];
        long pct = strtol(str, NULL, 10);
        if (strchr(str, '%'))  /* maxUnavailable rounds down, maxSurge up */
            *outs[i] = i == 0 ? pct * replicas / 100 : (pct * replicas + 99) / 100;
        else
            *outs[i] = pct;
    }
    if (mu == 0 && ms == 0)
        mu = 1;
    if (mu > replicas)
        mu = replicas;
    return mu < 0 ? 0 : (int32_t)mu;
}

static json_t *status_deployment(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    int32_t replicas = (int32_t)fl_json_path_int(spec, "replicas", 1);
    json_int_t gen = fl_json_path_int(x->obj, "metadata.generation", 1);
    bool fake = fl_sim_podspec_fake(fl_json_path(spec, "template.spec"));
    int32_t stored = (int32_t)fl_json_path_int(st, "readyReplicas", 0);
    int32_t ready = fake ? 0 : grow(x, stored, replicas);
    bool progress = ready != stored || fl_json_path_int(st, "observedGeneration", 0) != gen ||
                    fl_json_path_int(st, "replicas", 0) != replicas || !st;
    bool complete = !fake && ready >= replicas;
    const json_t *oc = json_object_get(st, "conditions");

    char hash[11], msg[600];
    template_hash(json_object_get(spec, "template"), hash);
    json_t *conds = json_array();
    bool avail = ready >= replicas - max_unavailable(spec, replicas);
    json_array_append_new(conds, mk_cond(oc, COND_DEPLOY, "Available", avail ? "True" : "False",
                                         avail ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
                                         avail ? "Deployment has minimum availability."
                                               : "Deployment does not have minimum availability.",
                                         x->nows, false));
    const char *pst = "True", *preason;
    if (complete) {
        preason = "NewReplicaSetAvailable";
        snprintf(msg, sizeof msg, "ReplicaSet \"%s-%s\" has successfully progressed.", x->ref->name, hash);
    } else if (json_is_true(json_object_get(spec, "paused"))) {
        pst = "Unknown";
        preason = "DeploymentPaused";
        snprintf(msg, sizeof msg, "Deployment is paused");
    } else {
        /* no progress since the Progressing condition's lastUpdateTime: past the deadline? */
        json_int_t deadline = x->s->cfg.progress_deadline_override_s > 0
                                  ? x->s->cfg.progress_deadline_override_s
                                  : fl_json_path_int(spec, "progressDeadlineSeconds", 600);
        const json_t *old = NULL;
        size_t i;
        json_t *c;
        json_array_foreach(oc, i, c) if (!strcmp(jstr_or(c, "type", ""), "Progressing")) old = c;
        time_t last = progress ? -1 : parse_time(fl_json_path_str(old, "lastUpdateTime"));
        if (last < 0)
            last = x->wall;
        bool was_exceeded = !progress && old && !strcmp(jstr_or(old, "reason", ""), "ProgressDeadlineExceeded");
        if (was_exceeded || x->wall - last >= deadline) {
            pst = "False";
            preason = "ProgressDeadlineExceeded";
            snprintf(msg, sizeof msg, "ReplicaSet \"%s-%s\" has timed out progressing.", x->ref->name, hash);
        } else {
            preason = "ReplicaSetUpdated";
            snprintf(msg, sizeof msg, "ReplicaSet \"%s-%s\" is progressing.", x->ref->name, hash);
            /* look again just after the deadline (timestamps have whole seconds) */
            want_due(x, x->now + (int64_t)(last + deadline - x->wall) * 1000 + 20);
        }
    }
    json_array_append_new(conds, mk_cond(oc, COND_DEPLOY, "Progressing", pst, preason, msg, x->nows, progress));

    json_t *out = json_object();
    json_object_set_new(out, "observedGeneration", json_integer(gen));
    set_nz(out, "replicas", replicas);
    set_nz(out, "updatedReplicas", replicas);
    set_nz(out, "readyReplicas", ready);
    set_nz(out, "availableReplicas", ready);
    set_nz(out, "unavailableReplicas", replicas - ready);
    json_object_set_new(out, "conditions", conds);
    return out;
}

static json_t *status_replicaset(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    int32_t replicas = (int32_t)fl_json_path_int(spec, "replicas", 1);
    bool fake = fl_sim_podspec_fake(fl_json_path(spec, "template.spec"));
    int32_t ready = fake ? 0 : grow(x, (int32_t)fl_json_path_int(st, "readyReplicas", 0), replicas);
    json_t *out = json_object();
    json_object_set_new(out, "replicas", json_integer(replicas));
    set_nz(out, "fullyLabeledReplicas", replicas);
    set_nz(out, "readyReplicas", ready);
    set_nz(out, "availableReplicas", ready);
    json_object_set_new(out, "observedGeneration", json_integer(fl_json_path_int(x->obj, "metadata.generation", 1)));
    return out;
}

static json_t *status_statefulset(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    int32_t replicas = (int32_t)fl_json_path_int(spec, "replicas", 1);
    bool fake = fl_sim_podspec_fake(fl_json_path(spec, "template.spec"));
    int32_t ready = fake ? 0 : grow(x, (int32_t)fl_json_path_int(st, "readyReplicas", 0), replicas);
    char hash[11], rev[600];
    template_hash(json_object_get(spec, "template"), hash);
    snprintf(rev, sizeof rev, "%s-%s", x->ref->name, hash);
    json_t *out = json_object();
    json_object_set_new(out, "observedGeneration", json_integer(fl_json_path_int(x->obj, "metadata.generation", 1)));
    json_object_set_new(out, "replicas", json_integer(replicas));
    set_nz(out, "readyReplicas", ready);
    set_nz(out, "currentReplicas", replicas);
    set_nz(out, "updatedReplicas", replicas);
    json_object_set_new(out, "currentRevision", json_string(rev));
    json_object_set_new(out, "updateRevision", json_string(rev));
    json_object_set_new(out, "collisionCount", json_integer(0));
    json_object_set_new(out, "availableReplicas", json_integer(ready));
    return out;
}

/* Nodes of the cluster that a pod with this nodeSelector may run on. */
typedef struct node_scan {
    const json_t *selector;
    bool skip_unschedulable;
    char **names;
    size_t n, cap;
} node_scan;

static bool node_scan_fn(void *ctx, const char *key, const fl_kv *kv)
{
    node_scan *ns = ctx;
    json_t *node = fl_json_load(kv->value->data, kv->value->len);
    if (!node)
        return true;
    bool ok = !(ns->skip_unschedulable && json_is_true(fl_json_path(node, "spec.unschedulable"))) &&
              !fl_json_path(node, "metadata.deletionTimestamp");
    const json_t *labels = fl_json_path(node, "metadata.labels");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ns->selector, k, v) {
        const char *have = json_string_value(json_object_get(labels, k));
        if (!have || !json_is_string(v) || strcmp(have, json_string_value(v)))
            ok = false;
    }
    const char *name = fl_json_path_str(node, "metadata.name");
    if (ok && name) {
        if (ns->n == ns->cap) {
            ns->cap = ns->cap ? ns->cap * 2 : 8;
            ns->names = fl_realloc(ns->names, ns->cap * sizeof *ns->names);
        }
        ns->names[ns->n++] = fl_strdup(name);
    }
    json_decref(node);
    return true;
}

static void nodes_matching(sim_cluster *c, const json_t *selector, bool skip_unschedulable, node_scan *out)
{
    memset(out, 0, sizeof *out);
    out->selector = selector;
    out->skip_unschedulable = skip_unschedulable;
    int64_t rev;
    fl_store_list(c->api->store, "/core/nodes/", NULL, 0, 0, node_scan_fn, out, &rev, NULL);
}

static void node_scan_free(node_scan *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->names[i]);
    free(ns->names);
}

static json_t *status_daemonset(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    node_scan ns;
    nodes_matching(x->c, fl_json_path(spec, "template.spec.nodeSelector"), false, &ns);
    int32_t desired = (int32_t)ns.n;
    node_scan_free(&ns);
    bool fake = fl_sim_podspec_fake(fl_json_path(spec, "template.spec"));
    int32_t ready = fake ? 0 : grow(x, (int32_t)fl_json_path_int(st, "numberReady", 0), desired);
    json_t *out = json_object();
    json_object_set_new(out, "currentNumberScheduled", json_integer(desired));
    json_object_set_new(out, "numberMisscheduled", json_integer(0));
    json_object_set_new(out, "desiredNumberScheduled", json_integer(desired));
    json_object_set_new(out, "numberReady", json_integer(ready));
    json_object_set_new(out, "observedGeneration", json_integer(fl_json_path_int(x->obj, "metadata.generation", 1)));
    set_nz(out, "updatedNumberScheduled", desired);
    set_nz(out, "numberAvailable", ready);
    set_nz(out, "numberUnavailable", desired - ready);
    return out;
}

static bool has_true_cond(const json_t *st, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c) if (!strcmp(jstr_or(c, "type", ""), type) &&
                                                                    !strcmp(jstr_or(c, "status", ""), "True")) return true;
    return false;
}

/* NULL: leave the Job alone (finished, suspended, or told to run nothing). */
static json_t *status_job(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    if (has_true_cond(st, "Complete") || has_true_cond(st, "Failed") || json_is_true(json_object_get(spec, "suspend")))
        return NULL;
    json_int_t completions = fl_json_path_int(spec, "completions", 1), parallelism = fl_json_path_int(spec, "parallelism", 1);
    if (parallelism <= 0 || completions <= 0)
        return NULL;
    json_int_t active = parallelism < completions ? parallelism : completions;
    bool fake = fl_sim_podspec_fake(fl_json_path(spec, "template.spec"));
    const char *start = fl_json_path_str(st, "startTime") ? fl_json_path_str(st, "startTime") : x->nows;

    json_t *out = json_object();
    json_object_set_new(out, "startTime", json_string(start));
    json_object_set_new(out, "terminating", json_integer(0));
    json_object_set_new(out, "uncountedTerminatedPods", json_object());
    int js = x->s->cfg.job_seconds;
    bool done = !fake && js < 0;
    if (!fake && !done) {
        sim_obj *o = fl_sim_obj_get(x->c, x->key);
        if (!o->start) {
            time_t t = parse_time(fl_json_path_str(st, "startTime"));
            o->start = x->now - (t >= 0 && t <= x->wall ? (int64_t)(x->wall - t) * 1000 : 0);
        }
        int64_t at = o->start + (int64_t)js * 1000;
        if (x->now >= at)
            done = true;
        else
            want_due(x, at);
    }
    /* activeDeadlineSeconds: a Job still running then fails, as the Job controller fails it
     * (an image that never pulls included) */
    json_int_t ads = fl_json_path_int(spec, "activeDeadlineSeconds", 0);
    time_t started = parse_time(start);
    if (!done && ads > 0 && started >= 0) {
        if (x->wall - started >= ads) {
            const char *m = "Job was active longer than specified deadline";
            json_t *conds = json_array();
            const json_t *oc = json_object_get(st, "conditions");
            json_array_append_new(conds, mk_cond(oc, COND_JOB, "FailureTarget", "True", "DeadlineExceeded", m, x->nows, 0));
            json_array_append_new(conds, mk_cond(oc, COND_JOB, "Failed", "True", "DeadlineExceeded", m, x->nows, 0));
            json_object_set_new(out, "conditions", conds);
            json_object_set_new(out, "failed", json_integer(active));
            json_object_set_new(out, "ready", json_integer(0));
            return out;
        }
        want_due(x, x->now + (int64_t)(started + ads - x->wall) * 1000 + 20);
    }
    if (done) {
        const char *m = "Reached expected number of succeeded pods";
        json_object_set_new(out, "completionTime", json_string(x->nows));
        json_object_set_new(out, "succeeded", json_integer(completions));
        json_object_set_new(out, "ready", json_integer(0));
        json_t *conds = json_array();
        const json_t *oc = json_object_get(st, "conditions");
        json_array_append_new(conds,
                              mk_cond(oc, COND_JOB, "SuccessCriteriaMet", "True", "CompletionsReached", m, x->nows, 0));
        json_array_append_new(conds, mk_cond(oc, COND_JOB, "Complete", "True", "CompletionsReached", m, x->nows, 0));
        json_object_set_new(out, "conditions", conds);
    } else {
        json_object_set_new(out, "active", json_integer(active));
        json_object_set_new(out, "ready", json_integer(fake ? 0 : active));
    }
    return out;
}

/* The InternalIP of a node, or NULL (heap). */
static char *node_ip(sim_cluster *c, const char *node)
{
    char *key = fl_asprintf("/core/nodes/%s", node);
    fl_kv kv;
    char *ip = NULL;
    if (fl_store_get(c->api->store, key, &kv) == 0) {
        json_t *n = fl_json_load(kv.value->data, kv.value->len);
        fl_blob_unref(kv.value);
        size_t i;
        json_t *a;
        json_array_foreach(fl_json_path(n, "status.addresses"), i, a) if (!ip && !strcmp(jstr_or(a, "type", ""), "InternalIP") &&
                                                                    fl_json_path_str(a, "address")) ip = fl_strdup(fl_json_path_str(a, "address"));
        json_decref(n);
    }
    free(key);
    return ip;
}

static const char *qos_class(const json_t *ps)
{
    bool any = false, guaranteed = true;
    const char *lists[2] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *ct;
        json_array_foreach(json_object_get(ps, lists[l]), i, ct) {
            const json_t *req = fl_json_path(ct, "resources.requests"), *lim = fl_json_path(ct, "resources.limits");
            if (json_object_size(req) || json_object_size(lim))
                any = true;
            static const char *res[2] = {"cpu", "memory"};
            for (int r = 0; r < 2; r++) {
                const char *lv = json_string_value(json_object_get(lim, res[r]));
                const char *rv = json_string_value(json_object_get(req, res[r]));
                int64_t a, b;
                if (!lv || (rv && (fl_sim_parse_quantity(lv, 1000, &a) || fl_sim_parse_quantity(rv, 1000, &b) || a != b)))
                    guaranteed = false;
            }
        }
    }
    return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

/* Status of one container list entry. */
static json_t *ct_status(const json_t *ct, const json_t *old_list, const char *uid, bool fake, bool init,
                         const char *now)
{
    const char *name = jstr_or(ct, "name", ""), *image = jstr_or(ct, "image", "");
    const json_t *old = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(old_list, i, c) if (!strcmp(jstr_or(c, "name", ""), name)) old = c;
    json_t *out = json_object();
    json_object_set_new(out, "name", json_string(name));
    json_object_set_new(out, "image", json_string(image));
    json_object_set_new(out, "imageID", json_string(""));
    if (!fake) {
        char id[96];
        snprintf(id, sizeof id, "containerd://%08x%08x%08x%08x", fnv1a(uid, strlen(uid)), fnv1a(name, strlen(name)),
                 fnv1a(image, strlen(image)), fnv1a(uid, strlen(uid) / 2));
        json_object_set_new(out, "containerID", json_string(id));
    }
    json_object_set_new(out, "ready", json_boolean(!fake && !init));
    json_object_set_new(out, "restartCount", json_integer(0));
    if (!init)
        json_object_set_new(out, "started", json_boolean(!fake));
    json_t *state;
    if (fake) {
        char msg[600];
        snprintf(msg, sizeof msg, "Back-off pulling image \"%s\"", image);
        state = json_pack("{s{ssss}}", "waiting", "reason", "ImagePullBackOff", "message", msg);
    } else if (init) {
        const char *sa = jstr_or(old, "state.terminated.startedAt", now);
        const char *fa = jstr_or(old, "state.terminated.finishedAt", now);
        state = json_pack("{s{sisssssss}}", "terminated", "exitCode", 0, "reason", "Completed", "startedAt", sa,
                          "finishedAt", fa, "containerID", json_string_value(json_object_get(out, "containerID")));
    } else {
        state = json_pack("{s{ss}}", "running", "startedAt", jstr_or(old, "state.running.startedAt", now));
    }
    json_object_set_new(out, "state", state);
    return out;
}

/* Pick a node for a pod without one and bind it there (a spec change: PATCH on the Pod,
 * not /status). Replaces x->obj with the bound pod. Returns 0, 1 if no node fits (the
 * caller reports Unschedulable), or -1 if the write failed (an event will bring us back). */
static int bind_pod(sim_eval *x, int *nnodes)
{
    node_scan ns;
    nodes_matching(x->c, fl_json_path(x->obj, "spec.nodeSelector"), true, &ns);
    *nnodes = (int)fl_store_count(x->c->api->store, "/core/nodes/");
    if (!ns.n) {
        node_scan_free(&ns);
        return 1;
    }
    const char *node = ns.names[x->c->next_node++ % ns.n];
    json_t *resp = NULL;
    int code = fl_sim_patch_obj(x->s, x->c, x->ref, NULL, x->obj, "spec", json_pack("{ss}", "nodeName", node), &resp);
    node_scan_free(&ns);
    if (code != 200 || !resp) {
        json_decref(resp);
        return -1;
    }
    json_decref(x->obj);
    x->obj = resp;
    return 0;
}

/* NULL: leave the Pod alone (finished, or binding failed). */
static json_t *status_pod(sim_eval *x)
{
    const json_t *st = json_object_get(x->obj, "status");
    const char *phase = fl_json_path_str(st, "phase");
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
        return NULL;
    const json_t *oc = json_object_get(st, "conditions");
    json_t *out = json_object();
    if (!fl_json_path_str(x->obj, "spec.nodeName") || !*fl_json_path_str(x->obj, "spec.nodeName")) {
        int nnodes = 0, rc = bind_pod(x, &nnodes);
        if (rc < 0) {
            json_decref(out);
            return NULL;
        }
        if (rc > 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "0/%d nodes are available: %d node(s) didn't match Pod's node affinity/selector.",
                     nnodes, nnodes);
            json_object_set_new(out, "phase", json_string("Pending"));
            json_t *conds = json_array();
            json_array_append_new(conds,
                                  mk_cond(oc, COND_POD, "PodScheduled", "False", "Unschedulable", msg, x->nows, 0));
            json_object_set_new(out, "conditions", conds);
            json_object_set_new(out, "qosClass", json_string(qos_class(json_object_get(x->obj, "spec"))));
            return out;
        }
        st = json_object_get(x->obj, "status");
        oc = json_object_get(st, "conditions");
    }
    const json_t *spec = json_object_get(x->obj, "spec");
    bool fake = fl_sim_podspec_fake(spec);
    const char *uid = jstr_or(x->obj, "metadata.uid", x->key);
    const char *ok = fake ? "False" : "True";
    const char *why = fake ? "ContainersNotReady" : NULL;
    char msg[600] = "containers with unready status: [";
    if (fake) {
        size_t i, n = strlen(msg);
        json_t *ct;
        json_array_foreach(json_object_get(spec, "containers"), i, ct) n +=
            (size_t)snprintf(msg + n, n < sizeof msg ? sizeof msg - n : 0, "%s%s", i ? " " : "", jstr_or(ct, "name", ""));
        if (n < sizeof msg - 1)
            strcat(msg, "]");
    }
    json_t *conds = json_array();
    json_array_append_new(conds, mk_cond(oc, COND_POD, "Initialized", "True", NULL, NULL, x->nows, 0));
    json_array_append_new(conds, mk_cond(oc, COND_POD, "Ready", ok, why, fake ? msg : NULL, x->nows, 0));
    json_array_append_new(conds, mk_cond(oc, COND_POD, "ContainersReady", ok, why, fake ? msg : NULL, x->nows, 0));
    json_array_append_new(conds, mk_cond(oc, COND_POD, "PodScheduled", "True", NULL, NULL, x->nows, 0));
    json_object_set_new(out, "phase", json_string(fake ? "Pending" : "Running"));
    json_object_set_new(out, "conditions", conds);

    char *hip = node_ip(x->c, fl_json_path_str(spec, "nodeName"));
    if (hip) {
        json_object_set_new(out, "hostIP", json_string(hip));
        json_object_set_new(out, "hostIPs", json_pack("[{ss}]", "ip", hip));
        free(hip);
    }
    char ipbuf[32];
    const char *pip = fl_json_path_str(st, "podIP");
    if (!pip) {
        uint32_t n = x->c->next_ip++;
        snprintf(ipbuf, sizeof ipbuf, "10.244.%u.%u", (n / 250) % 256, n % 250 + 2);
        pip = ipbuf;
    }
    json_object_set_new(out, "podIP", json_string(pip));
    json_object_set_new(out, "podIPs", json_pack("[{ss}]", "ip", pip));
    json_object_set_new(out, "startTime", json_string(jstr_or(st, "startTime", x->nows)));

    const char *lists[2] = {"initContainers", "containers"}, *slists[2] = {"initContainerStatuses", "containerStatuses"};
    for (int l = 0; l < 2; l++) {
        const json_t *cts = json_object_get(spec, lists[l]);
        if (!json_array_size(cts))
            continue;
        json_t *arr = json_array();
        size_t i;
        json_t *ct;
        json_array_foreach(cts, i, ct) json_array_append_new(
            arr, ct_status(ct, json_object_get(st, slists[l]), uid, fake, l == 0, x->nows));
        json_object_set_new(out, slists[l], arr);
    }
    json_object_set_new(out, "qosClass", json_string(qos_class(spec)));
    return out;
}

json_t *fl_sim_status(sim_eval *x)
{
    switch (x->ref->kind) {
    case SK_DEPLOY: return status_deployment(x);
    case SK_RS: return status_replicaset(x);
    case SK_STS: return status_statefulset(x);
    case SK_DS: return status_daemonset(x);
    case SK_JOB: return status_job(x);
    case SK_POD: return status_pod(x);
    case SK_HPA: return fl_sim_status_hpa(x);
    case SK_PDB: return fl_sim_status_pdb(x);
    case SK_ING:
    case SK_SVC: return fl_sim_status_lb(x);
    default: return NULL;
    }
}
