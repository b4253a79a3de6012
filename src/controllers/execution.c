/* execution.c - the execution engine: delivers each Work to its member.
 *
 * A Work in namespace karmada-es-<cluster> is a bundle of manifests for <cluster>. For a
 * cluster it delivers to (syncMode Push in the server, its own Pull cluster in the
 * agent), the engine holds the Work with a finalizer, creates or updates every manifest
 * in the member (marked as ours: label karmada.io/managed=true, annotations
 * work.karmada.io/name and /namespace), keeps what the member owns through the Retain
 * rules (retain.c), refuses to take over objects that exist and are not ours unless the
 * conflict resolution says "overwrite", and reports the outcome in the Work's status:
 * the Applied condition and, per manifest, the member object's status and health
 * (workstatus.c). When the Work is deleted it deletes what it delivered (or, with
 * preserveResourcesOnDeletion, only takes its marks off) and then lets the Work go.
 * Works of clusters it does not deliver to are left alone; those of clusters that do
 * not exist wait for them.
 *
 * Shape: an informer on Works (and, in the push controller, on Clusters) feeds one
 * de-duplicating queue of Work keys ("namespace/name"); a few workers reconcile keys,
 * reading the Work, the cluster's state and the member objects from caches (the member
 * objects through the shared per-kind watches of workstatus.c, whose events also
 * re-queue the owning Work: a deleted object comes back, a status change is reported).
 * A reconcile is idempotent: an object that already matches its manifest is not
 * written, and the status is written only when it changed, so re-queuing a Work costs
 * memory reads only. That is what lets a changed interpreter customization re-queue every
 * Work of its kind (fl_exec_requeue_kind): only the Works whose retain, status or health
 * really change are written. Failures are retried with the queue's per-key back-off, and a
 * resync every 30 s re-queues the Works whose last apply did not succeed and stops the
 * member watches no Work needs any more.
 *
 * Everything the controller knows is in the store or in the members: after a restart
 * the first list of Works re-queues them all, and each reconcile finds the member
 * objects it created before by their marks, so nothing is created twice.
 *
 * Two users, one reconcile. The engine (fl_exec) knows Works, members and the control
 * plane, and asks its owner two things through fl_exec_ops — whether it delivers a
 * cluster's Works, and the member client for it. The server's push controller
 * (execution_push.c) answers from the Cluster informer and fl_members; the pull agent
 * (agent.c) answers for its one cluster with its one member client and watches only its
 * own execution namespace.
 *
 * This file is the engine's core: its lifecycle, the Work informer's handlers, the
 * reconcile, and applying (or removing) a Work's manifests. What a suspended Work or a
 * paused cluster does instead of a delivery is in execution_suspend.c; the member watches
 * started ahead of the first list, resumed where they were noted, and swept by the resync,
 * in execution_watches.c; the Works waiting for delivery and the first statuses held for
 * them, in execution_waiting.c. They share the engine's state through execution_priv.h. */
#include "controllers/execution_priv.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controllers/controller.h"
#include "controllers/dispatching.h"
#include "controllers/events.h"
#include "controllers/metricsstatus.h"
#include "controllers/names.h"
#include "core/condition.h"
#include "core/env.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/timefmt.h"
#include "core/wellknown.h"
#include "interp/livestate.h"

#define EXEC_WORKERS 8
#define EXEC_FIRST_STATUS_MS 100 /* FLOTILLA_EXEC_FIRST_STATUS_MS; 0: at once */
/* FLOTILLA_EXEC_FIRST_STATUS_MAX_MS: how long after its first apply a first status may wait
 * for other Works' deliveries (first_status_later) */
#define EXEC_FIRST_STATUS_MAX_MS 10000
/* Works joining delivery within about a second that make a burst (in_burst);
 * FLOTILLA_EXEC_BURST_WORKS */
#define EXEC_BURST_WORKS 200
/* Works waiting for delivery that hold a first status back (first_status_later);
 * FLOTILLA_EXEC_HOLD_UNDELIVERED */
#define EXEC_HOLD_UNDELIVERED 64

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};

/* ---- small helpers ---- */

/* The cluster a Work is for, from its namespace; NULL when it is not an execution space. */
static const char *work_cluster(const json_t *work)
{
    const char *ns = fl_json_meta(work, "namespace");
    size_t n = strlen(FL_EXECUTION_SPACE_PREFIX);
    return ns && !strncmp(ns, FL_EXECUTION_SPACE_PREFIX, n) && ns[n] ? ns + n : NULL;
}

/* The API group of an apiVersion, as a heap string ("" for the core group). */
static char *group_of(const char *api_version)
{
    const char *slash = strchr(api_version, '/');
    return slash ? fl_strndup(api_version, (size_t)(slash - api_version)) : fl_strdup("");
}

/* a ⊆ b: every field a sets has the same value in b (arrays: same length, element by
 * element). Fields the member's apiserver defaults (present only in b) do not count as
 * a difference, so an object that matches its manifest is not rewritten on every pass. */
static bool subset(const json_t *a, const json_t *b)
{
    if (json_is_null(a))
        return !b || json_is_null(b);
    if (json_is_object(a)) {
        if (!b)
            return json_object_size(a) == 0;
        if (!json_is_object(b))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) if (!subset(v, json_object_get(b, k))) return false;
        return true;
    }
    if (json_is_array(a)) {
        if (!b)
            return json_array_size(a) == 0;
        if (!json_is_array(b) || json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!subset(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return b && fl_json_same(a, b);
}

/* ---- the Work itself: finalizer and status ---- */

/* Add or remove our finalizer with an update pinned to the cached resourceVersion (a
 * stale cache answers FL_ECONFLICT and the key is retried). work and text are as
 * fl_informer_get_partial gave them. *out (when not NULL) gets the updated Work. */
static int set_finalizer(exec *x, const json_t *work, const fl_informer_src *src, bool add, json_t **out)
{
    json_t *whole = fl_informer_whole(x->works, work, src); /* an update carries all of it */
    if (!whole)
        return FL_EIO;
    json_t *copy = fl_json_deep_copy(whole);
    json_decref(whole);
    fl_json_set_finalizer(copy, FL_EXECUTION_FINALIZER, add);
    fl_client_error ce = {0};
    int rc = fl_client_update(x->cp, &WORKS, fl_json_meta(work, "namespace"), copy, NULL, out, &ce);
    if (rc == FL_ENOTFOUND && !add)
        rc = 0; /* gone already */
    if (rc && rc != FL_ECONFLICT)
        fl_log_kv(FL_LOG_WARN, "execution", add ? "adding the finalizer failed" : "removing the finalizer failed",
                  "object", FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), "err",
                  fl_errmsg(ce.message, rc), NULL);
    json_decref(copy);
    return rc;
}

/* ---- ownership ---- */

enum owner { OWNER_US, OWNER_OTHER_WORK, OWNER_NONE };

/* Whose is a member object: this Work's (our label, and our Work's annotations or none),
 * another Work's, or nobody's (not managed by Flotilla/Karmada). */
static enum owner owner_of(const json_t *obj, const json_t *work)
{
    const char *managed = fl_json_meta_map(obj, "labels", FL_MANAGED_LABEL);
    if (!managed || strcmp(managed, "true"))
        return OWNER_NONE;
    const char *n = fl_json_meta_map(obj, "annotations", FL_WORK_NAME_ANNOTATION);
    const char *ns = fl_json_meta_map(obj, "annotations", FL_WORK_NAMESPACE_ANNOTATION);
    if (!n || !ns)
        return OWNER_US;
    return !strcmp(n, fl_json_meta(work, "name")) && !strcmp(ns, fl_json_meta(work, "namespace")) ? OWNER_US : OWNER_OTHER_WORK;
}

/* The conflict resolution for a manifest: Karmada's binding controller writes the
 * annotation on the manifest; a Work written by hand may carry it on the Work. */
static bool overwrite_allowed(const json_t *manifest, const json_t *work)
{
    const char *v = fl_json_meta_map(manifest, "annotations", FL_CONFLICT_RESOLUTION_ANNOTATION);
    if (!v)
        v = fl_json_meta_map(work, "annotations", FL_CONFLICT_RESOLUTION_ANNOTATION);
    return v && !strcasecmp(v, "overwrite");
}

static void mark(json_t *obj, const json_t *work)
{
    json_t *m = fl_json_ensure_obj(obj, "metadata");
    json_object_set_new(fl_json_ensure_obj(m, "labels"), FL_MANAGED_LABEL, json_string("true"));
    json_t *ann = fl_json_ensure_obj(m, "annotations");
    json_object_set_new(ann, FL_WORK_NAME_ANNOTATION, json_string(fl_json_meta(work, "name")));
    json_object_set_new(ann, FL_WORK_NAMESPACE_ANNOTATION, json_string(fl_json_meta(work, "namespace")));
}

/* ---- interpreter failures ----
 *
 * A rule that fails on a member object (a customization's script that errs or runs out of
 * its budget, a webhook that does not answer) is reported where Karmada reports it, on the
 * Work (reasons SyncFailed for retain, ReflectStatusFailed, InterpretHealthFailed), and on
 * the Work's binding, where users look first; the message is the interpreter's, naming the
 * customization and the script line. The recorder folds a repeat of the same message into
 * the existing Event's count, so a Work re-queued while the rule keeps failing does not
 * flood. A kind without a rule is not a failure and reports nothing. */

static void interp_failed(exec *x, const json_t *work, const char *cluster, const char *reason, const char *msg)
{
    /* debug only: the events are the report, and a failing rule fails on every re-queue */
    fl_log_kv(FL_LOG_DEBUG, "execution", "interpreter rule failed", "object",
              FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), "cluster", cluster,
              "err", msg, NULL);
    fl_event(x->recorder, work, "Warning", reason, "%s", msg);
    const char *bns = fl_json_meta_map(work, "annotations", FL_RB_NAMESPACE_ANNOTATION);
    const char *rb = fl_json_meta_map(work, "annotations", FL_RB_NAME_ANNOTATION);
    const char *crb = fl_json_meta_map(work, "annotations", FL_CRB_NAME_ANNOTATION);
    json_t *binding = NULL;
    if (bns && rb && x->rbs)
        fl_informer_get(x->rbs, bns, rb, &binding);
    else if (crb && x->crbs)
        fl_informer_get(x->crbs, NULL, crb, &binding);
    if (binding)
        fl_event(x->recorder, binding, "Warning", reason, "cluster %s: %s", cluster, msg);
    json_decref(binding);
}

/* Report what fl_ws_manifest_status could not interpret about target t (frees both). */
static void report_interp(exec *x, const json_t *work, const char *cluster, const char *kind, const char *ns,
                          const char *name, char *reflect_err, char *health_err)
{
    if (reflect_err) {
        char *msg = fl_asprintf("Reflect status for object(%s/%s/%s) failed, err: %s", kind, ns ? ns : "", name,
                                reflect_err);
        interp_failed(x, work, cluster, "ReflectStatusFailed", msg);
        free(msg);
    }
    if (health_err) {
        char *msg = fl_asprintf("Interpret health of object(%s/%s/%s) failed, err: %s", kind, ns ? ns : "", name,
                                health_err);
        interp_failed(x, work, cluster, "InterpretHealthFailed", msg);
        free(msg);
    }
    free(reflect_err);
    free(health_err);
}

/* ---- one manifest ---- */

void fl_exec_target_close(fl_exec_target *t)
{
    free(t->resource);
    free(t->group);
}

/* Resolve manifest i's kind in the member. On failure *emsg says why. */
int fl_exec_target_init(fl_client *mc, const char *cluster, int i, const json_t *m, fl_exec_target *t, char **emsg)
{
    memset(t, 0, sizeof *t);
    t->api_version = fl_json_str(m, "apiVersion");
    t->kind = fl_json_str(m, "kind");
    t->name = fl_json_meta(m, "name");
    if (!t->api_version || !t->kind || !t->name || !*t->name) {
        *emsg = fl_asprintf("manifest %d: apiVersion, kind and metadata.name are required", i);
        return FL_EINVAL;
    }
    bool namespaced = false;
    fl_client_error ce = {0};
    int rc = fl_client_resolve(mc, t->api_version, t->kind, &t->resource, &namespaced, &ce);
    if (rc) {
        *emsg = rc == FL_ENOTFOUND
                    ? fl_asprintf("manifest %d: cluster %s does not serve kind %s in %s", i, cluster, t->kind,
                                  t->api_version)
                    : fl_asprintf("manifest %d: cluster %s: discovery of %s failed: %s", i, cluster, t->api_version,
                                  fl_errmsg(ce.message, rc));
        return rc;
    }
    const char *mns = fl_json_meta(m, "namespace");
    t->ns = namespaced ? (mns && *mns ? mns : "default") : NULL;
    t->group = group_of(t->api_version);
    t->gvr = (fl_gvr){t->api_version, t->resource};
    return 0;
}

/* "resource(kind=Deployment, default/web)" as Karmada words it in messages. */
static char *describe(const fl_exec_target *t)
{
    return fl_asprintf("resource(kind=%s, %s%s%s)", t->kind, t->ns ? t->ns : "", t->ns ? "/" : "", t->name);
}

/* ---- a member object that needs nothing ----
 *
 * Most applies find the member's object as the manifest would leave it: every re-check after
 * a restart, every reconcile that a status change woke. Applying means copying the manifest,
 * marking it, merging it with the member's object by the retain rules, and comparing the
 * result with that object. The native rules only take from the member's object, so where
 * they are the ones that answer, the merge is within the member's object whenever the marked
 * manifest is: that is checked here, in place, without building either. */

/* Whether the string map m (labels or annotations; NULL: none) is within e, apart from
 * the keys of ours (our marks), which e must have with ours' values. */
static bool map_within(const json_t *m, const json_t *e, const json_t *ours)
{
    if (m && !json_is_object(m))
        return false; /* not a map: marking would replace it, so the full apply judges */
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        if (!json_object_get(ours, k) && !subset(v, json_object_get(e, k)))
            return false;
    }
    json_object_foreach((json_t *)ours, k, v) {
        if (!fl_json_same(v, json_object_get(e, k)))
            return false;
    }
    return true;
}

/* Whether the member's object e already holds what applying manifest m for work would
 * write (see above). False means only: apply in full. */
static bool already_applied(exec *x, const json_t *m, const json_t *e, const json_t *work, const fl_exec_target *t)
{
    if (!json_is_object(m) || !json_is_object(e) ||
        !fl_interp_native_first(x->interp, t->api_version, t->kind, FL_INTERP_RETAIN))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        if (strcmp(k, "status") && strcmp(k, "metadata") && !subset(v, json_object_get(e, k)))
            return false;
    }
    const json_t *md = json_object_get(m, "metadata"), *emd = json_object_get(e, "metadata");
    if ((md && !json_is_object(md)) || !json_is_object(emd))
        return false;
    if (t->ns) {
        const char *ens = json_string_value(json_object_get(emd, "namespace"));
        if (!ens || strcmp(ens, t->ns))
            return false;
    }
    json_object_foreach((json_t *)md, k, v) {
        if (strcmp(k, "namespace") && strcmp(k, "labels") && strcmp(k, "annotations") &&
            !subset(v, json_object_get(emd, k)))
            return false;
    }
    if (!fl_json_meta(work, "name") || !fl_json_meta(work, "namespace"))
        return false;
    json_t *marks = json_object(); /* our marks, as mark() puts them */
    mark(marks, work);
    const json_t *ours = json_object_get(marks, "metadata");
    bool within = map_within(json_object_get(md, "labels"), json_object_get(emd, "labels"),
                             json_object_get(ours, "labels")) &&
                  map_within(json_object_get(md, "annotations"), json_object_get(emd, "annotations"),
                             json_object_get(ours, "annotations"));
    json_decref(marks);
    return within;
}

/* Create or update manifest i of work in cluster. On success *observed is the member
 * object as it now is (new reference; status source). On failure *emsg (heap) names
 * the manifest and the error. */
static int apply_manifest(exec *x, const char *cluster, fl_client *mc, const json_t *work, int i, const json_t *m,
                          fl_exec_target *t, json_t **observed, char **emsg)
{
    *observed = NULL;
    int rc = fl_exec_target_init(mc, cluster, i, m, t, emsg);
    if (rc)
        return rc;
    /* The member watch is for status, for noticing deletions and for knowing what the member
     * has. apply_work waited (up to LIST_GRACE_MS) for its first list; a watch still not
     * listed after that (a slow member) leaves an absent cache entry meaning only "try to
     * create": AlreadyExists then reads the object itself. */
    fl_ws_watch *wt = NULL;
    bool metrics = fl_mstatus_owns(cluster); /* a cluster whose status comes from metrics: no watch */
    rc = metrics ? 0 : fl_ws_watch_get(x->watches, cluster, mc, t->api_version, t->kind, t->resource, -1, &wt);
    if (rc) {
        *emsg = fl_asprintf("manifest %d: cluster %s: %s", i, cluster, fl_strerror(rc));
        return rc;
    }

    fl_client_error ce = {0};
    json_t *existing = NULL, *out = NULL, *desired = NULL;
    char *what = describe(t);
    if (metrics) {
        rc = fl_client_get(mc, &t->gvr, t->ns, t->name, &existing, &ce);
        if (rc && rc != FL_ENOTFOUND)
            goto failed;
        memset(&ce, 0, sizeof ce);
        rc = 0;
    } else if (fl_informer_get(fl_ws_watch_informer(wt), t->ns, t->name, &existing) == FL_EEXPIRED) {
        /* the watch keeps only its owner, its status being recorded (recorded_settle): the
         * object itself is read from the member */
        fl_metrics_count("flotilla_execution_member_reads_total",
                         "Member objects an apply read from the member, their watch keeping only their owner", 1);
        rc = fl_client_get(mc, &t->gvr, t->ns, t->name, &existing, &ce);
        if (rc && rc != FL_ENOTFOUND)
            goto failed;
        memset(&ce, 0, sizeof ce);
        rc = 0;
    }
    if (existing && already_applied(x, m, existing, work, t)) {
        *observed = json_incref(existing);
        goto done;
    }
    desired = fl_json_deep_copy(m);
    json_object_del(desired, "status");
    json_t *md = fl_json_ensure_obj(desired, "metadata");
    if (t->ns)
        json_object_set_new(md, "namespace", json_string(t->ns));
    else
        json_object_del(md, "namespace");
    mark(desired, work);
    if (!existing) {
        rc = fl_client_create(mc, &t->gvr, t->ns, desired, NULL, &out, &ce);
        if (rc == 0) {
            fl_log_kv(FL_LOG_INFO, "execution", "created in member cluster", "object",
                      FL_LOG_OBJ(t->kind, t->ns, t->name), "cluster", cluster, "work",
                      FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), NULL);
            *observed = out;
            t->wrote = true;
            goto done;
        }
        if (rc != FL_EEXIST)
            goto failed;
        /* there, but not ours (our watch sees only what we manage) or not seen yet */
        rc = fl_client_get(mc, &t->gvr, t->ns, t->name, &existing, &ce);
        if (rc)
            goto failed;
    }

    enum owner own = owner_of(existing, work);
    if (own != OWNER_US && !overwrite_allowed(m, work)) {
        if (own == OWNER_OTHER_WORK)
            *emsg = fl_asprintf("manifest %d: %s already exists in the cluster %s and is managed by Work %s/%s", i,
                                what, cluster, fl_json_meta_map(existing, "annotations", FL_WORK_NAMESPACE_ANNOTATION),
                                fl_json_meta_map(existing, "annotations", FL_WORK_NAME_ANNOTATION));
        else
            *emsg = fl_asprintf("manifest %d: %s already exists in the cluster %s and the %s strategy value is "
                                "empty, Karmada will not manage this resource",
                                i, what, cluster, FL_CONFLICT_RESOLUTION_ANNOTATION);
        rc = FL_ECONFLICT;
        goto done;
    }
    if (own == OWNER_NONE && !fl_exec_adoption_allowed(x, work)) {
        *emsg = fl_asprintf("manifest %d: %s already exists in the cluster %s and the adoption allow-list does not "
                            "admit it: label the namespace on the control plane %s=true, annotate the policy "
                            "%s=true, or adopt it with `flotilla ctl promote`",
                            i, what, cluster, FL_ADOPT_KEY, FL_ADOPT_KEY);
        rc = FL_ECONFLICT;
        goto done;
    }
    for (int attempt = 0;; attempt++) {
        json_t *merged = NULL;
        char *rerr = NULL;
        rc = fl_interp_retain(x->interp, desired, existing, &merged, &rerr);
        if (rc) {
            /* the member's object is left as it is until the rule works again */
            *emsg = fl_asprintf("manifest %d: %s: retain: %s", i, what, rerr ? rerr : fl_strerror(rc));
            char *msg = fl_asprintf("Failed to sync %s to cluster %s: retain: %s", what, cluster,
                                    rerr ? rerr : fl_strerror(rc));
            interp_failed(x, work, cluster, "SyncFailed", msg);
            free(msg);
            free(rerr);
            goto done;
        }
        if (subset(merged, existing)) {
            *observed = json_incref(existing);
            rc = 0;
        } else {
            rc = fl_client_update(mc, &t->gvr, t->ns, merged, NULL, &out, &ce);
            if (rc == 0) {
                fl_log_kv(FL_LOG_INFO, "execution",
                          own == OWNER_US ? "updated in member cluster" : "took over in member cluster", "object",
                          FL_LOG_OBJ(t->kind, t->ns, t->name), "cluster", cluster, "work",
                          FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), NULL);
                *observed = out;
                t->wrote = true;
            }
        }
        json_decref(merged);
        if (rc != FL_ECONFLICT || attempt)
            break;
        /* the cache was behind the member: read the object itself and try once more */
        json_decref(existing);
        existing = NULL;
        memset(&ce, 0, sizeof ce);
        rc = fl_client_get(mc, &t->gvr, t->ns, t->name, &existing, &ce);
        if (rc)
            break;
        if (owner_of(existing, work) != own) {
            rc = FL_ECONFLICT; /* ownership changed meanwhile: judge again on the retry */
            break;
        }
    }
    if (rc == 0)
        goto done;

failed:
    *emsg = fl_asprintf("manifest %d: %s in the cluster %s: %s", i, what, cluster,
                        fl_errmsg(ce.message, rc));
done:
    free(what);
    json_decref(existing);
    json_decref(desired);
    if (wt)
        fl_ws_watch_put(x->watches, wt);
    return rc;
}

/* ---- reconcile ---- */

/* Append "; part" (or "part") to *acc. */
static void append_msg(char **acc, const char *part)
{
    char *n = *acc ? fl_asprintf("%s; %s", *acc, part) : fl_strdup(part);
    free(*acc);
    *acc = n;
}

/* Whether op for t's kind is answered by the native rule, or by none. */
static bool native_rule(exec *x, const fl_exec_target *t, enum fl_interp_op op)
{
    return fl_interp_native_first(x->interp, t->api_version, t->kind, op) ||
           !fl_interp_has(x->interp, t->api_version, t->kind, op);
}

/* Whether the native rules (or none) answer for t's kind what an apply and its status read:
 * retain, status and health. A customization or webhook may change its answers with no
 * version moving. */
static bool native_answers(exec *x, const fl_exec_target *t)
{
    return native_rule(x, t, FL_INTERP_RETAIN) && native_rule(x, t, FL_INTERP_REFLECT_STATUS) &&
           native_rule(x, t, FL_INTERP_HEALTH);
}

/* The Work's manifestStatuses entry for ordinal (borrowed), or NULL. */
const json_t *fl_exec_entry_of(const json_t *work, int ordinal)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(fl_json_obj(work, "status"), "manifestStatuses"), i, e) {
        json_t *o = json_object_get(fl_json_obj(e, "identifier"), "ordinal");
        if (json_is_integer(o) && json_integer_value(o) == ordinal)
            return e;
    }
    return NULL;
}

/* A copy of the Work's manifestStatuses entry for manifest `ordinal`, or NULL. */
static json_t *previous_entry(const json_t *work, int ordinal)
{
    const json_t *e = fl_exec_entry_of(work, ordinal);
    return e ? fl_json_deep_copy(e) : NULL;
}

/* Record in e, manifest i's new entry, the version of the member object observed as this
 * apply left it (see survey_watches), when the native rules made the entry
 * (native). An entry that comes out as the Work has it keeps the version recorded there,
 * unless this apply wrote the object: an object that moved on its own without a change in
 * what its status reflects is not worth a status write, and an entry the same under a
 * customization is still what the native rules made. The recorded version is only what a
 * later reconcile compares; a stale one costs that Work a full check, not a wrong answer. */
static void record_version(const json_t *work, int i, json_t *e, const json_t *observed, bool wrote, bool native)
{
    const char *rv = native ? fl_client_object_rv(observed) : "";
    const json_t *prev = native && wrote ? NULL : fl_exec_entry_of(work, i);
    json_t *prv = json_object_get(prev, FL_WS_OBSERVED_RV);
    if (json_is_string(prv) && strcmp(json_string_value(prv), rv)) {
        json_t *was = fl_json_shallow_copy(prev);
        json_object_del(was, FL_WS_OBSERVED_RV);
        if (fl_json_same(was, e))
            rv = json_string_value(prv);
        json_decref(was);
    }
    if (*rv)
        json_object_set_new(e, FL_WS_OBSERVED_RV, json_string(rv));
}

int fl_exec_member_client(exec *x, const char *cluster, fl_client **mc, char **emsg)
{
    char *err = NULL;
    *mc = NULL;
    int rc = x->ops.member(x->ops.ctx, cluster, mc, &err);
    if (rc)
        *emsg = fl_asprintf("cluster %s: %s", cluster, err ? err : fl_strerror(rc));
    free(err);
    return rc;
}

/* Manifest i's manifestStatuses entry from its member object observed, the interpreter's
 * failures (reflecting status, health) reported on the Work and its binding. */
json_t *fl_exec_manifest_entry(exec *x, const json_t *work, const char *cluster, int i, const fl_exec_target *t,
                              const json_t *observed)
{
    json_t *prev = previous_entry(work, i);
    char *rerr = NULL, *herr = NULL;
    json_t *e = fl_ws_manifest_status(x->interp, i, t->api_version, t->kind, t->resource, t->ns, t->name, observed,
                                      prev, &rerr, &herr);
    json_decref(prev);
    report_interp(x, work, cluster, t->kind, t->ns, t->name, rerr, herr);
    json_t *metrics = fl_mstatus_owns(cluster) ? fl_mstatus_live(cluster, t->api_version, t->kind, t->ns, t->name)
                                               : NULL;
    if (metrics) /* the metrics way has the record: what the apply read is not watched */
        json_object_set_new(e, "liveStatus", metrics);
    else
        fl_mstatus_count_record(fl_client_in_process(x->cp) ? "watch" : "agent");
    if (fl_live_reason_ages(fl_json_str(fl_json_obj(e, "liveStatus"), "reason"))) {
        /* its live state changes with time alone: judge it again then */
        char *key = fl_cat(fl_json_meta(work, "namespace"), "/", fl_json_meta(work, "name"), NULL);
        fl_workqueue_add_after(x->q, key, FL_LIVE_UNSCHEDULABLE_MS + 500);
        free(key);
    }
    return e;
}

/* apply_work's "not yet": a member watch it needs is still making its first list. The Work
 * waits, parked on that watch, until the list is over (then the list's adds, or the watch,
 * put it back on the queue), and nothing is written. */
#define NOT_LISTED_YET 1
/* a Work cache behind our own status write: looked at again this much later at the latest
 * (its event usually comes first) */
#define BEHIND_RETRY_MS 100
/* How long a member watch's first list is waited for without moving (no page) before
 * delivery goes on without it */
#define LIST_GRACE_MS 3000

/* ---- a Work whose member objects did not move ----
 *
 * An apply records in each manifestStatuses entry the resourceVersion of the member object
 * it left (or found) as the manifest wants it. When the Work applied at its generation with
 * delivery running, and every manifest's object is still at its recorded version in the
 * member watch, nothing that the apply and the status read has changed since: not the
 * manifests (the generation), not the objects (their versions), and so not what their
 * status reflects. Then both are skipped, and no object is decoded. That is every Work
 * after a restart (the member watches list again) whose objects did not change while the
 * server was down. Only for kinds whose retain, status and health rules are the native
 * ones: a customization may change its answers with no version moving. */

/* The Work's manifestStatuses (borrowed) when they may say it is unchanged: Applied and
 * Dispatching True at its generation, and one entry per manifest (n); else NULL. */
static const json_t *applied_entries(const json_t *work, size_t n)
{
    const json_t *gen = json_object_get(json_object_get(work, "metadata"), "generation");
    static const char *const running[] = {"Applied", FL_DISPATCHING_CONDITION};
    for (size_t c = 0; c < 2; c++) {
        const json_t *cond = fl_condition_of(work, running[c]);
        const char *st = fl_json_str(cond, "status");
        if (!st || strcmp(st, "True") || !json_is_integer(gen) ||
            !fl_json_same(json_object_get(cond, "observedGeneration"), gen))
            return NULL;
    }
    const json_t *entries = json_object_get(fl_json_obj(work, "status"), "manifestStatuses");
    return n && json_array_size(entries) == n ? entries : NULL;
}

/* Whether entry e records the version the watch wt holds for manifest i's object (t). */
static bool at_recorded_version(exec *x, const json_t *e, size_t i, const fl_exec_target *t, fl_ws_watch *wt)
{
    const char *rv = fl_json_str(e, FL_WS_OBSERVED_RV);
    char have[64];
    const json_t *live = fl_json_obj(e, "liveStatus"); /* none: made before there was one */
    return rv && strlen(rv) < sizeof have && live && !fl_live_reason_ages(fl_json_str(live, "reason")) &&
           json_integer_value(json_object_get(fl_json_obj(e, "identifier"), "ordinal")) == (json_int_t)i &&
           native_answers(x, t) &&
           fl_informer_get_rv(fl_ws_watch_informer(wt), t->ns, t->name, have, sizeof have) == 0 &&
           !strcmp(have, rv);
}

/* Member objects whose status a Work records at the version their watch holds. Once the
 * Work's status with that record is stored, each watch keeps only the object's owner
 * (fl_informer_shed): nothing reads the rest until the object or the manifest changes. An
 * event brings the object whole again; an apply of a changed manifest reads it from the
 * member (apply_manifest). Not from survey_watches: after a restart that would shed every
 * object in the members while the fleet is checked, a sixteenth more of the server's CPU
 * there; the next status write of each Work sheds its objects. */
typedef struct recorded {
    fl_ws_watch *wt; /* a reference */
    char *ns, *name, *rv;
} recorded;

typedef struct recorded_list {
    recorded *v;
    size_t n;
} recorded_list;

/* Add t's object at rv, whose watch is wt (the reference is taken over). */
static void recorded_add(recorded_list *l, fl_ws_watch *wt, const fl_exec_target *t, const char *rv)
{
    l->v = fl_realloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = (recorded){wt, t->ns ? fl_strdup(t->ns) : NULL, fl_strdup(t->name), fl_strdup(rv)};
}

/* The list's watches shed their objects (when stored: the Work's status records them), then
 * the list is emptied. */
static void recorded_settle(exec *x, recorded_list *l, bool stored)
{
    for (size_t i = 0; i < l->n; i++) {
        recorded *r = &l->v[i];
        if (stored && fl_informer_shed(fl_ws_watch_informer(r->wt), r->ns, r->name, r->rv))
            fl_metrics_count("flotilla_execution_member_objects_shed_total",
                             "Member objects whose watch keeps only their owner, their status being recorded in "
                             "their Work",
                             1);
        fl_ws_watch_put(x->watches, r->wt);
        free(r->ns);
        free(r->name);
        free(r->rv);
    }
    free(l->v);
    *l = (recorded_list){0};
}

/* What the Work's manifests find in their member watches, each manifest's kind resolved and
 * watch taken once:
 * - WATCH_LISTING: a watch is making its first list, and the Work is parked on it. Until it
 *   has listed, its cache cannot say what the member already has, and every manifest would
 *   cost a create (409) and a read: after a restart, two requests per object in every
 *   member. Retrying meanwhile would only spin: at a restart that is every Work, each
 *   retried with back-off while lists of tens of thousands of objects go on.
 * - WATCH_UNCHANGED: every object is at the version its entry records (above).
 * - WATCH_APPLY: anything else. */
enum watch_survey { WATCH_APPLY, WATCH_LISTING, WATCH_UNCHANGED };

static enum watch_survey survey_watches(exec *x, const char *cluster, fl_client *mc, const json_t *work,
                                        const json_t *manifests)
{
    size_t n = json_array_size(manifests);
    if (fl_mstatus_owns(cluster))
        return WATCH_APPLY; /* no member watch there: each manifest's object is read as it is applied */
    const json_t *entries = applied_entries(work, n);
    bool listing = false, unchanged = entries != NULL;
    for (size_t i = 0; i < n && !listing; i++) {
        fl_exec_target t;
        char *emsg = NULL;
        fl_ws_watch *wt = NULL;
        if (fl_exec_target_init(mc, cluster, (int)i, json_array_get(manifests, i), &t, &emsg) == 0 &&
            fl_ws_watch_get(x->watches, cluster, mc, t.api_version, t.kind, t.resource, -1, &wt) == 0) {
            if (fl_ws_watch_listing(wt, LIST_GRACE_MS)) {
                char *key = fl_cat(fl_json_meta(work, "namespace"), "/", fl_json_meta(work, "name"), NULL);
                listing = fl_ws_watch_park(wt, key);
                free(key);
            }
            unchanged = unchanged && !listing && at_recorded_version(x, json_array_get(entries, i), i, &t, wt);
            fl_ws_watch_put(x->watches, wt);
        } else {
            unchanged = false;
        }
        free(emsg); /* apply_manifest reports it */
        fl_exec_target_close(&t);
    }
    return listing ? WATCH_LISTING : unchanged ? WATCH_UNCHANGED : WATCH_APPLY;
}

static int apply_work(exec *x, const char *cluster, const json_t *listed, const fl_informer_src *src)
{
    const json_t *work = listed; /* whole once the manifests are applied (below) */
    fl_client *mc = NULL;
    char *errs = NULL;
    int rc = fl_exec_member_client(x, cluster, &mc, &errs);
    if (rc) {
        char *msg = fl_asprintf("Failed to apply all manifests (0/%zu): %s",
                                json_array_size(json_object_get(fl_json_obj(fl_json_obj(work, "spec"), "workload"), "manifests")),
                                errs);
        json_t *kept = fl_json_deep_copy(json_object_get(fl_json_obj(work, "status"), "manifestStatuses"));
        fl_exec_write_status(x, work, false, "AppliedFailed", msg, NULL, kept);
        free(msg);
        free(errs);
        return rc;
    }

    json_t *manifests = json_object_get(fl_json_obj(fl_json_obj(work, "spec"), "workload"), "manifests");
    enum watch_survey found = survey_watches(x, cluster, mc, work, manifests);
    if (found == WATCH_LISTING)
        return NOT_LISTED_YET;
    if (found == WATCH_UNCHANGED) {
        fl_metrics_count("flotilla_execution_work_unchanged_total",
                         "Work reconciles that found every member object at the version its status records, "
                         "and so applied and wrote nothing",
                         1);
        return 0;
    }
    /* the survey needs only each manifest's kind and name; applying needs the rest */
    json_t *whole = fl_informer_whole(x->works, listed, src);
    if (!whole)
        return FL_EIO;
    work = whole;
    manifests = json_object_get(fl_json_obj(fl_json_obj(work, "spec"), "workload"), "manifests");
    json_t *statuses = json_array();
    size_t n = json_array_size(manifests), ok = 0;
    int first_err = 0;
    /* a version is recorded only for an entry the native rules made: asked after the
     * entry, with no change of the rules since before it */
    uint64_t rules = fl_interp_edits(x->interp);
    recorded_list rec = {0}; /* shed once the status that records them is stored */
    for (size_t i = 0; i < n; i++) {
        json_t *observed = NULL;
        char *emsg = NULL;
        fl_exec_target t;
        int r = apply_manifest(x, cluster, mc, work, (int)i, json_array_get(manifests, i), &t, &observed, &emsg);
        if (r == 0) {
            ok++;
            json_t *e = fl_exec_manifest_entry(x, work, cluster, (int)i, &t, observed);
            bool native = native_answers(x, &t) && fl_interp_edits(x->interp) == rules;
            record_version(work, (int)i, e, observed, t.wrote, native);
            const char *rv = fl_json_str(e, FL_WS_OBSERVED_RV);
            fl_ws_watch *wt = NULL;
            if (rv && !fl_mstatus_owns(cluster) &&
                fl_ws_watch_get(x->watches, cluster, mc, t.api_version, t.kind, t.resource, -1, &wt) == 0)
                recorded_add(&rec, wt, &t, rv);
            json_array_append_new(statuses, e);
        } else {
            /* what we last knew of this manifest stays until we know better */
            json_t *prev = previous_entry(work, (int)i);
            if (prev)
                json_array_append_new(statuses, prev);
            append_msg(&errs, emsg ? emsg : fl_strerror(r));
            if (!first_err)
                first_err = r;
        }
        free(emsg);
        json_decref(observed);
        fl_exec_target_close(&t);
    }

    int wrc;
    bool stored = false; /* the status with every entry's version is stored */
    if (first_err) {
        char *msg = fl_asprintf("Failed to apply all manifests (%zu/%zu): %s", ok, n, errs);
        fl_log_kv(FL_LOG_WARN, "execution", "applying the Work failed", "object",
                  FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), "cluster", cluster,
                  "err", msg, NULL);
        wrc = fl_exec_write_status(x, work, false, "AppliedFailed", msg, NULL, statuses);
        free(msg);
    } else if (fl_exec_first_status_later(x, work, statuses)) {
        json_decref(statuses);
        wrc = 0;
    } else {
        wrc = fl_exec_write_status(x, work, true, "AppliedSuccessful", "Manifest has been successfully applied", NULL,
                                   statuses);
        stored = wrc == 0;
    }
    recorded_settle(x, &rec, stored);
    free(errs);
    json_decref(whole);
    return first_err ? first_err : wrc;
}

/* Our marks, off a member object: the start of a merge patch (Karmada's claim cleanup). */
#define MARKS_OFF \
    "{\"metadata\":{\"labels\":{\"" FL_MANAGED_LABEL "\":null," \
    "\"resourcebinding.karmada.io/permanent-id\":null," \
    "\"clusterresourcebinding.karmada.io/permanent-id\":null," \
    "\"work.karmada.io/permanent-id\":null," \
    "\"propagationpolicy.karmada.io/permanent-id\":null," \
    "\"clusterpropagationpolicy.karmada.io/permanent-id\":null}," \
    "\"annotations\":{\"" FL_WORK_NAME_ANNOTATION "\":null,\"" FL_WORK_NAMESPACE_ANNOTATION "\":null," \
    "\"resourcetemplate.karmada.io/managed-annotations\":null," \
    "\"resourcetemplate.karmada.io/managed-labels\":null," \
    "\"resourcetemplate.karmada.io/uid\":null," \
    "\"resourcetemplate.karmada.io/generation\":null," \
    "\"resourcebinding.karmada.io/namespace\":null," \
    "\"resourcebinding.karmada.io/name\":null," \
    "\"clusterresourcebinding.karmada.io/name\":null," \
    "\"propagationpolicy.karmada.io/namespace\":null," \
    "\"propagationpolicy.karmada.io/name\":null," \
    "\"clusterpropagationpolicy.karmada.io/name\":null"

/* The Work is going: delete what it delivered (or, preserving, take our marks off); or it is
 * released: take our marks off. Objects that are not this Work's are left alone. */
static int remove_manifests(exec *x, const char *cluster, const json_t *work, const fl_informer_src *src)
{
    (void)src; /* each manifest's kind and name is all it reads of them */
    fl_client *mc = NULL;
    char *emsg = NULL;
    int rc = fl_exec_member_client(x, cluster, &mc, &emsg);
    if (rc) {
        fl_log_kv(FL_LOG_WARN, "execution", "cleaning up after the deleted Work failed", "object",
                  FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), "cluster", cluster,
                  "err", emsg, NULL);
        free(emsg);
        return rc;
    }
    bool release = fl_exec_released(work);
    bool preserve = release || json_is_true(json_object_get(fl_json_obj(work, "spec"), "preserveResourcesOnDeletion"));
    json_t *manifests = json_object_get(fl_json_obj(fl_json_obj(work, "spec"), "workload"), "manifests");
    size_t i;
    json_t *m;
    int first_err = 0;
    json_array_foreach(manifests, i, m) {
        fl_exec_target t;
        int r = fl_exec_target_init(mc, cluster, (int)i, m, &t, &emsg);
        if (r == FL_ENOTFOUND || r == FL_EINVAL) { /* nothing of that kind can be there */
            free(emsg);
            emsg = NULL;
            fl_exec_target_close(&t);
            continue;
        }
        json_t *obj = NULL;
        fl_client_error ce = {0};
        if (r == 0)
            r = fl_client_get(mc, &t.gvr, t.ns, t.name, &obj, &ce);
        if (r == 0 && owner_of(obj, work) == OWNER_US) {
            char *what = describe(&t);
            if (preserve) {
                /* the object becomes the member's own: none of the control plane's marks
                 * stay (Karmada's claim cleanup; the conflict-resolution annotation stays,
                 * but not after a release, which leaves no mark of ours) */
                static const char keep[] = MARKS_OFF "}}}";
                static const char all[] = MARKS_OFF ",\"" FL_CONFLICT_RESOLUTION_ANNOTATION "\":null}}}";
                const char *patch = release ? all : keep;
                r = fl_client_patch(mc, &t.gvr, t.ns, t.name, FL_PATCH_MERGE, patch, strlen(patch), NULL, NULL, &ce);
                if (r == 0)
                    fl_log_kv(FL_LOG_INFO, "execution",
                              release ? "released in member cluster (migration.flotilla.io/release)"
                                      : "released in member cluster (Work deleted, resources preserved)",
                              "object",
                              FL_LOG_OBJ(t.kind, t.ns, t.name), "cluster", cluster, "work",
                              FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), NULL);
            } else {
                fl_delete_opts del = {.propagation_policy = "Background"};
                r = fl_client_delete(mc, &t.gvr, t.ns, t.name, &del, NULL, &ce);
                if (r == 0)
                    fl_log_kv(FL_LOG_INFO, "execution", "deleted in member cluster (Work deleted)", "object",
                              FL_LOG_OBJ(t.kind, t.ns, t.name), "cluster", cluster, "work",
                              FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), NULL);
            }
            free(what);
        }
        if (r == FL_ENOTFOUND)
            r = 0;
        if (r) {
            fl_log_kvf(FL_LOG_WARN, "execution",
                       FL_LOG_KV("object",
                                 FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")),
                                 "cluster", cluster, "err", emsg ? emsg : fl_errmsg(ce.message, r)),
                       "cleaning up manifest %zu of the deleted Work failed", i);
            if (!first_err)
                first_err = r;
        }
        free(emsg);
        emsg = NULL;
        json_decref(obj);
        fl_exec_target_close(&t);
    }
    return first_err;
}

/* A released Work (migration.flotilla.io/release): take our marks off what it delivered,
 * leave the objects as they are, and say so in its status. Nothing is applied again. */
static int release_work(exec *x, const char *cluster, const json_t *work, const fl_informer_src *src)
{
    int rc = remove_manifests(x, cluster, work, src);
    if (rc)
        return rc;
    return fl_exec_write_status(x, work, false, "Released",
                                "Released (" FL_RELEASE_ANNOTATION "): the member's objects are no longer managed and "
                                "carry no mark of Flotilla",
                                NULL, NULL);
}

static int reconcile(exec *x, const char *key)
{
    if (key[0] == CLUSTER_KEY_PREFIX)
        return fl_exec_reconcile_cluster(x, key + 1);
    fl_metrics_count("flotilla_execution_work_reconciles_total",
                     "Works the execution controller reconciled (an agent counts its own)", 1);
    /* a pass that is not a delivery skips a Work whose first status is not due yet: the
     * pass at the time (or at the release) writes it */
    pthread_mutex_lock(&x->mu);
    json_t *pending = json_object_get(x->undelivered, key);
    json_int_t seq = pending ? json_integer_value(json_array_get(pending, 0)) : -1;
    json_t *seen = seq < 0 ? json_object_get(x->first_status, key) : NULL;
    int64_t left = seen ? json_integer_value(json_array_get(seen, FS_DUE)) - fl_time_now_ms() : 0;
    pthread_mutex_unlock(&x->mu);
    if (left > 0) {
        /* the queue's clock may run a little ahead of ours: make sure it comes back */
        fl_workqueue_add_after(x->q, key, left);
        return 0;
    }
    json_t *work = NULL;
    fl_informer_src src = {0}; /* where the cache holds the Work without the rest of its manifests */
    char *cluster = NULL;
    int rc = 0;
    if (fl_informer_get_partial(x->works, key, &work, &src)) {
        fl_exec_first_status_forget(x, key);
        fl_status_lag_forget(fl_ws_watches_lag(x->watches), key);
        goto out; /* gone: the member watches go at the next sweep */
    }
    if (fl_exec_copy_behind(x, key, work)) {
        /* our own status write is on its way to the cache, whose event brings the key back */
        fl_workqueue_add_after(x->q, key, BEHIND_RETRY_MS);
        rc = NOT_LISTED_YET; /* not a try: a waiting delivery still waits */
        goto out;
    }
    /* a copy: `work` is replaced below once our finalizer is on */
    cluster = work_cluster(work) ? fl_strdup(work_cluster(work)) : NULL;
    if (!cluster)
        goto out;
    fl_exec_cluster cl = {0};
    x->ops.cluster(x->ops.ctx, cluster, &cl);
    bool deleting = fl_json_meta(work, "deletionTimestamp") != NULL;
    bool ours = fl_json_has_finalizer(work, FL_EXECUTION_FINALIZER);
    if (!cl.deliver) {
        /* not ours to deliver: the other mode's (its engine cleans up and takes the
         * finalizer off), or an absent cluster (it may join later; a deleted Work of a
         * cluster nobody delivers to must not hang on the finalizer) */
        if (deleting && ours && !cl.present)
            rc = set_finalizer(x, work, &src, false, NULL);
        goto out;
    }
    bool suspended = json_is_true(json_object_get(fl_json_obj(work, "spec"), "suspendDispatching"));
    if (deleting) {
        if (!ours)
            goto out;
        if (cl.deleting) {
            /* an unjoining cluster: clean up what can be reached, and never hold its Works
             * forever (a suspended or paused Work's objects stay: nothing may touch them) */
            if (!suspended && fl_exec_delivery_begin(x, cluster)) {
                remove_manifests(x, cluster, work, &src);
                fl_exec_delivery_end(x, cluster);
            }
            rc = set_finalizer(x, work, &src, false, NULL);
            goto out;
        }
        /* suspended: the member keeps what was delivered, and the Work waits (terminating)
         * until it is resumed; then the objects go and so does the Work */
        bool removed = false;
        rc = fl_exec_deliver(x, cluster, work, &src, suspended, remove_manifests, &removed);
        if (rc == 0 && removed)
            rc = set_finalizer(x, work, &src, false, NULL);
        goto out;
    }
    if (!ours) {
        json_t *updated = NULL;
        rc = set_finalizer(x, work, &src, true, &updated);
        if (rc)
            goto out;
        json_decref(work);
        work = updated; /* the write's answer: whole */
        fl_informer_src_close(&src);
    }
    bool applied = false;
    rc = fl_exec_deliver(x, cluster, work, &src, suspended, fl_exec_released(work) ? release_work : apply_work,
                         &applied);
    if (applied && seq >= 0 && rc != NOT_LISTED_YET)
        fl_exec_count_delivery(x, key, rc);
    if (rc == 0) /* its status says what its member objects are now */
        fl_status_lag_reflected(fl_ws_watches_lag(x->watches), key);
out:
    /* this pass tried the delivery (or found nothing to deliver), unless the member watches
     * it needs are still listing; an enqueue meanwhile stays for the next pass */
    if (seq >= 0 && rc != NOT_LISTED_YET) {
        json_t *released = NULL;
        pthread_mutex_lock(&x->mu);
        pending = json_object_get(x->undelivered, key);
        if (pending && json_integer_value(json_array_get(pending, 0)) == seq) {
            fl_exec_undelivered_del(x, key);
            if (!json_object_size(x->undelivered))
                released = fl_exec_release_held(x);
        }
        pthread_mutex_unlock(&x->mu);
        size_t i;
        json_t *k;
        json_array_foreach(released, i, k)
            fl_workqueue_add(x->q, json_string_value(k));
        json_decref(released);
    }
    free(cluster);
    json_decref(work);
    fl_informer_src_close(&src);
    return rc == NOT_LISTED_YET ? 0 : rc; /* parked: the list's end brings it back */
}

static void *worker(void *arg)
{
    exec *x = arg;
    char *key;
    pthread_setname_np(pthread_self(), "fl-exec");
    /* Not before the Work cache has listed: a reconcile could only find its Work missing.
     * And a worker waiting on the queue meanwhile is woken by every add of the list, a
     * futex wake each: at 180,000 Works, a quarter of the listing thread's time. */
    fl_ctrl_wait_synced(x->q, (fl_informer *const[]){x->works, NULL});
    fl_ctrl_reconcile_metrics metrics;
    fl_ctrl_reconcile_metrics_init(&metrics, "execution");
    while (fl_workqueue_get(x->q, -1, &key) == 0) {
        if (!atomic_load(&x->quit)) {
            double t0 = fl_ctrl_now_s();
            int rc = reconcile(x, key);
            fl_ctrl_reconcile_observe(&metrics, rc == FL_ECONFLICT ? 1 : rc, fl_ctrl_now_s() - t0);
            fl_ctrl_requeue(x->q, key, rc);
        }
        fl_workqueue_done(x->q, key);
        free(key);
    }
    return NULL;
}

/* ---- informer handlers ---- */

/* A Work of a metrics cluster (metricsstatus.h) that says an object of it is NotFound: no
 * member watch re-queues it when an object is deleted behind the control plane's back, so the
 * resync applies it again. */
static bool metrics_not_found(const json_t *w)
{
    const char *ns = fl_json_meta(w, "namespace");
    size_t plen = strlen(FL_EXECUTION_SPACE_PREFIX), i;
    const json_t *e;
    bool missing = false;
    json_array_foreach(json_object_get(fl_json_obj(w, "status"), "manifestStatuses"), i, e) {
        const char *state = fl_json_str(fl_json_obj(e, "liveStatus"), "state");
        missing = missing || (state && !strcmp(state, "NotFound"));
    }
    return missing && ns && !strncmp(ns, FL_EXECUTION_SPACE_PREFIX, plen) && fl_mstatus_owns(ns + plen);
}

/* Whether the Work's last apply, at its current generation, succeeded: then the member
 * watches see whatever happens to its objects (an edit, a deletion, the managed label taken
 * away) and re-queue it, and the resync has nothing to add. */
bool fl_exec_settled(const json_t *w)
{
    const json_t *md = json_object_get(w, "metadata");
    if (json_object_get(md, "deletionTimestamp"))
        return false;
    const json_t *c = fl_condition_of(w, "Applied");
    const char *st = fl_json_str(c, "status");
    return st && !strcmp(st, "True") &&
           json_integer_value(json_object_get(c, "observedGeneration")) ==
               json_integer_value(json_object_get(md, "generation")) &&
           !metrics_not_found(w);
}

/* delivery: the Work is new, or changed in what delivery reads (not a resync's retry). It
 * waits for delivery (undelivered) unless it is settled: a Work listed again after a
 * restart, or re-queued for its cluster, that applied at its generation is re-checked, and
 * nothing new waits for that. */
void fl_exec_enqueue_work(exec *x, const json_t *work, bool delivery)
{
    const char *cluster = work_cluster(work);
    if (!cluster)
        return;
    /* a Work of a cluster that is there and that another engine delivers to (the other
     * mode's) is left alone by reconcile: no need to wake a worker for it. A Cluster that
     * changes mode re-queues its Works (fl_exec_requeue_cluster), and here they pass. */
    fl_exec_cluster cl = {0};
    x->ops.cluster(x->ops.ctx, cluster, &cl);
    if (cl.present && !cl.deliver)
        return;
    if (cl.deliver && !fl_informer_has_synced(x->works))
        fl_exec_watch_ahead(x, cluster, work);
    char *key = fl_informer_key(work);
    if (key && delivery && !fl_exec_settled(work)) {
        pthread_mutex_lock(&x->mu);
        char *bkey = fl_names_work_binding_key(work);
        fl_exec_undelivered_add(x, key, bkey);
        free(bkey);
        pthread_mutex_unlock(&x->mu);
    }
    if (key)
        fl_workqueue_add(x->q, key);
    free(key);
}

/* A Work a first list brings as it was when its cluster's member watches were noted: what
 * changed since in the member, the watch tells (fl_exec_resume). */
static bool resumed_unchanged(exec *x, const json_t *work)
{
    const char *cluster = work_cluster(work);
    if (!x->ops.resumed || !cluster)
        return false;
    pthread_mutex_lock(&x->mu);
    bool resumed = json_object_get(x->resume_clusters, cluster) != NULL;
    pthread_mutex_unlock(&x->mu);
    return resumed && x->ops.resumed(x->ops.ctx, work);
}

static void work_added(void *ctx, json_t *obj)
{
    if (resumed_unchanged(ctx, obj)) {
        fl_metrics_count("flotilla_execution_works_resumed_total",
                         "Works a resumed start left alone: unchanged since the reconciled revision, their member "
                         "watches going on from where they were noted",
                         1);
        return;
    }
    fl_exec_enqueue_work(ctx, obj, true);
}

/* Our own writes (the finalizer, status) come back as updates; reconciling them again would
 * triple the work per Work. Only what changes delivery wakes it: the spec (generation), the
 * deletion, and metadata users set (annotations such as conflict-resolution, labels). The
 * periodic resync covers anything else. */
static void work_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    const json_t *om = json_object_get(old_obj, "metadata"), *nm = json_object_get(new_obj, "metadata");
    if (fl_json_same(json_object_get(om, "generation"), json_object_get(nm, "generation")) &&
        !json_object_get(om, "deletionTimestamp") == !json_object_get(nm, "deletionTimestamp") &&
        fl_json_same(json_object_get(om, "annotations"), json_object_get(nm, "annotations")) &&
        fl_json_same(json_object_get(om, "labels"), json_object_get(nm, "labels")))
        return;
    fl_exec_enqueue_work(ctx, new_obj, true);
}

static void requeue_one(void *ctx, json_t *work)
{
    fl_exec_enqueue_work(ctx, work, true);
}

void fl_exec_requeue_cluster(fl_exec *x, const char *name)
{
    if (!x || !name)
        return;
    /* first: a Work listed after it is queued by its add, one before it is in the walk */
    fl_exec_unresume(x, name);
    char *ns = fl_asprintf("%s%s", FL_EXECUTION_SPACE_PREFIX, name);
    fl_informer_each(x->works, ns, requeue_one, x);
    free(ns);
    char *key = fl_asprintf("%c%s", CLUSTER_KEY_PREFIX, name);
    fl_workqueue_add(x->q, key);
    free(key);
}

typedef struct kind_walk {
    exec *x;
    const char *api_version, *kind;
} kind_walk;

static void requeue_if_kind(void *ctx, json_t *w)
{
    kind_walk *k = ctx;
    size_t j;
    json_t *m;
    json_array_foreach(json_object_get(fl_json_obj(fl_json_obj(w, "spec"), "workload"), "manifests"), j, m) {
        if (fl_ctrl_interp_matches(k->api_version, k->kind, fl_json_str(m, "apiVersion"), fl_json_str(m, "kind"))) {
            fl_exec_enqueue_work(k->x, w, true);
            return;
        }
    }
}

void fl_exec_requeue_kind(fl_exec *x, const char *api_version, const char *kind)
{
    if (!x)
        return;
    kind_walk k = {x, api_version, kind};
    fl_exec_unresume(x, NULL);
    fl_informer_each(x->works, NULL, requeue_if_kind, &k);
}

/* ---- lifecycle ---- */

int fl_exec_new(const fl_exec_config *cfg, fl_exec **out)
{
    *out = NULL;
    if (!cfg->cp || !cfg->ops.cluster || !cfg->ops.member)
        return FL_EINVAL;
    exec *x = fl_calloc(1, sizeof *x);
    x->cp = cfg->cp;
    x->ops = cfg->ops;
    x->want_workers = cfg->workers > 0 ? cfg->workers : EXEC_WORKERS;
    x->interp = cfg->interp;
    x->recorder = cfg->recorder;
    x->rbs = cfg->rbs;
    x->crbs = cfg->crbs;
    if (!x->interp)
        x->interp = x->own_interp = fl_interp_new();
    if (x->want_workers > EXEC_MAX_WORKERS)
        x->want_workers = EXEC_MAX_WORKERS;
    x->q = fl_workqueue_new(NULL);
    fl_workqueue_set_name(x->q, "execution");
    x->stop = fl_client_cancel_new();
    x->watches = fl_ws_watches_new(x->q);
    fl_metrics_on_scrape(fl_exec_scrape, x);
    fl_ws_watches_on_relisted(x->watches, fl_exec_relisted, x);
    x->resume_clusters = json_object();
    pthread_mutex_init(&x->tag_mu, NULL);
    x->kind_sets = json_array();
    x->kind_set_ids = json_object();
    x->scraped_clusters = json_object();
    atomic_init(&x->quit, false);
    pthread_mutex_init(&x->mu, NULL);
    x->inflight = json_object();
    x->want_ack = json_object();
    x->first_status = json_object();
    x->written = json_object();
    x->first_status_ms = fl_env_ms("FLOTILLA_EXEC_FIRST_STATUS_MS", EXEC_FIRST_STATUS_MS, 0);
    x->first_status_max_ms = fl_env_ms("FLOTILLA_EXEC_FIRST_STATUS_MAX_MS", EXEC_FIRST_STATUS_MAX_MS, 0);
    x->undelivered = json_object();
    x->undelivered_by = json_object();
    fl_metric *delivery = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_execution_delivery_duration_seconds",
                                           "From a Work's change first queued for delivery to its manifests applied in "
                                           "the member (result ok), or the apply failing (error).",
                                           "result", NULL, NULL, 0);
    x->m_delivery[0] = fl_metric_with(delivery, "ok", NULL);
    x->m_delivery[1] = fl_metric_with(delivery, "error", NULL);
    x->burst_works = fl_env_count("FLOTILLA_EXEC_BURST_WORKS", EXEC_BURST_WORKS, 1);
    x->hold_undelivered = fl_env_count("FLOTILLA_EXEC_HOLD_UNDELIVERED", EXEC_HOLD_UNDELIVERED, 1);
    x->ahead_seen = json_object();
    x->ahead_todo = json_array();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->ahead_cv, &ca);
    pthread_condattr_destroy(&ca);
    fl_informer_handlers wh = {.on_add = work_added, .on_update = work_updated, .ctx = x};
    fl_informer_config wc = {
        .client = cfg->cp,
        .resource = WORKS,
        .ns = cfg->ns,
        .handlers = wh,
        .transform = fl_informer_drop_managed_fields, /* and so not even decoded (an agent) */
    };
    int rc;
    if (cfg->works) {
        x->works = cfg->works;
        x->works_borrowed = true;
        rc = fl_informer_add_handlers(x->works, &wh);
    } else {
        rc = fl_informer_new(&wc, &x->works);
    }
    if (!rc)
        rc = fl_informer_set_tagger(x->works, fl_exec_work_tag, x);
    if (rc) {
        fl_exec_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

int fl_exec_start(fl_exec *x)
{
    if (x->started)
        return FL_EINVAL;
    x->started = true;
    /* before the Work informer, whose first list feeds it */
    x->ahead_started = pthread_create(&x->ahead, NULL, fl_exec_ahead_loop, x) == 0;
    int rc = x->works_borrowed ? 0 : fl_informer_start(x->works);
    if (rc)
        return rc;
    for (int i = 0; i < x->want_workers; i++)
        if (pthread_create(&x->workers[x->nworkers], NULL, worker, x) == 0)
            x->nworkers++;
    x->resync_started = pthread_create(&x->resync, NULL, fl_exec_resync_loop, x) == 0;
    return x->nworkers ? 0 : FL_EIO;
}

void fl_exec_free(fl_exec *x)
{
    if (!x)
        return;
    atomic_store(&x->quit, true);
    fl_client_cancel_fire(x->stop);
    if (x->resync_started)
        pthread_join(x->resync, NULL);
    if (x->works && !x->works_borrowed)
        fl_informer_stop(x->works);
    fl_workqueue_shut_down(x->q);
    fl_ws_watches_close(x->watches); /* wakes workers waiting for a member's first list */
    for (int i = 0; i < x->nworkers; i++)
        pthread_join(x->workers[i], NULL);
    if (x->ahead_started) {
        pthread_mutex_lock(&x->mu);
        pthread_cond_signal(&x->ahead_cv);
        pthread_mutex_unlock(&x->mu);
        pthread_join(x->ahead, NULL);
    }
    fl_metrics_remove_hook(fl_exec_scrape, x);
    fl_ws_watches_free(x->watches);
    if (!x->works_borrowed)
        fl_informer_free(x->works);
    fl_workqueue_free(x->q);
    fl_client_cancel_free(x->stop);
    fl_interp_free(x->own_interp);
    json_decref(x->inflight);
    json_decref(x->want_ack);
    json_decref(x->first_status);
    json_decref(x->written);
    json_decref(x->undelivered);
    json_decref(x->undelivered_by);
    json_decref(x->ahead_seen);
    json_decref(x->ahead_todo);
    json_decref(x->resume_todo);
    json_decref(x->resume_clusters);
    json_decref(x->kind_sets);
    json_decref(x->kind_set_ids);
    json_decref(x->scraped_clusters);
    pthread_mutex_destroy(&x->tag_mu);
    pthread_cond_destroy(&x->ahead_cv);
    pthread_mutex_destroy(&x->mu);
    free(x);
}
