/* execution.c - the execution engine: delivers each Work to its member; and the push
 * controller of `flotilla server` built on it.
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
 * Two users, one reconcile. The part above is the engine (fl_exec): it knows Works,
 * members and the control plane, and asks its owner two things through fl_exec_ops —
 * whether it delivers a cluster's Works, and the member client for it. The server's
 * push controller (the end of this file) answers from the Cluster informer and
 * fl_members; the pull agent (agent.c) answers for its one cluster with its one member
 * client and watches only its own execution namespace. */
#include "controllers/execution.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controllers/controller.h"
#include "controllers/dispatching.h"
#include "controllers/events.h"
#include "controllers/members.h"
#include "core/metrics.h"
#include "core/condition.h"
#include "core/env.h"
#include "core/json.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define EXEC_WORKERS 8
#define EXEC_RESYNC_MS 30000 /* FLOTILLA_EXEC_RESYNC_MS */
#define EXEC_FIRST_STATUS_MS 100 /* FLOTILLA_EXEC_FIRST_STATUS_MS; 0: at once */
/* FLOTILLA_EXEC_FIRST_STATUS_MAX_MS: how long after its first apply a first status may wait
 * for other Works' deliveries (first_status_later) */
#define EXEC_FIRST_STATUS_MAX_MS 10000
/* Works joining delivery within about a second that make a burst (in_burst);
 * FLOTILLA_EXEC_BURST_WORKS */
#define EXEC_BURST_WORKS 200

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};
static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

#define EXEC_MAX_WORKERS 16

struct fl_exec {
    fl_client *cp;
    fl_exec_ops ops;
    fl_interp *interp, *own_interp;
    fl_recorder *recorder;
    fl_informer *rbs, *crbs; /* optional: to report interpreter failures on bindings */
    int want_workers;
    fl_informer *works;
    bool works_borrowed;  /* the server's shared Work informer: not ours to start or stop */
    fl_workqueue *q;
    fl_ws_watches *watches;
    pthread_t workers[EXEC_MAX_WORKERS];
    int nworkers;
    pthread_t resync;
    bool resync_started, started;
    fl_client_cancel *stop;
    atomic_bool quit;
    /* delivery in flight per cluster, for the Paused acknowledgement: under mu, a worker
     * checks the cluster is not paused and counts itself in, in one step, so once a pause
     * is visible and the count is zero nothing can be applying to that member */
    pthread_mutex_t mu;
    json_t *inflight;  /* cluster -> number of workers applying or removing */
    json_t *want_ack;  /* clusters whose Paused acknowledgement waits for inflight to drain */
    /* Works applied for the first time whose first status waits (first_status_later):
     * key -> an array indexed by enum fs_field; under mu */
    json_t *first_status;
    int64_t first_status_ms, first_status_max_ms;
    /* Works added, or changed in what delivery reads, whose delivery has not been tried
     * since or is being tried: key -> the enqueue's number (undelivered_seq); under mu.
     * While there are any, first statuses wait. */
    json_t *undelivered;
    json_int_t undelivered_seq;
    int64_t busy_told_ms; /* busy_told: when last (the server's tick alone calls fl_exec_marks) */
    /* Works that joined undelivered in the second from window_ms: burst_works or more
     * start a burst, which lasts while more keep joining (in_burst) */
    int64_t window_ms, adds, burst_works, burst_until_ms;
    /* Member watches started ahead, while the Work cache makes its first list (watch_ahead):
     * the (cluster, kind) use keys seen, and those waiting for the ahead thread; under mu */
    json_t *ahead_seen, *ahead_todo;
    /* Resuming (fl_exec_resume): the noted member watches the ahead thread has still to
     * start, and the clusters whose unchanged Works a first list brings are left alone;
     * under mu */
    json_t *resume_todo, *resume_clusters;
    /* the kind sets Works use, for their tags (work_tag): an array of [[apiVersion, kind],
     * ...], and its index by "apiVersion\nkind\n..." (from 1); under tag_mu */
    pthread_mutex_t tag_mu;
    json_t *kind_sets, *kind_set_ids;
    pthread_cond_t ahead_cv;
    pthread_t ahead;
    bool ahead_started;
};
typedef struct fl_exec exec;

/* The fields of a first-status record (fl_exec.first_status), times from fl_time_now_ms */
enum fs_field {
    FS_GENERATION, /* the Work's generation applied */
    FS_DUE,        /* when the status is due */
    FS_APPLIED,    /* when it was applied */
    FS_HELD_NOW,   /* held for other Works' deliveries now */
    FS_HELD,       /* held at all */
};

#define CLUSTER_KEY_PREFIX '@' /* queue key of a cluster's Paused acknowledgement: "@name" */

/* ---- small helpers ---- */

static json_t *jobj(const json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_object(v) ? v : NULL;
}

static const char *jstr(const json_t *o, const char *key)
{
    return json_is_object(o) ? json_string_value(json_object_get(o, key)) : NULL;
}

static json_t *jensure(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(o, key, v);
    }
    return v;
}

static const char *meta(const json_t *obj, const char *key)
{
    return jstr(jobj(obj, "metadata"), key);
}

static const char *meta_map(const json_t *obj, const char *map, const char *key)
{
    return jstr(jobj(jobj(obj, "metadata"), map), key);
}

/* The cluster a Work is for, from its namespace; NULL when it is not an execution space. */
static const char *work_cluster(const json_t *work)
{
    const char *ns = meta(work, "namespace");
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

static bool has_finalizer(const json_t *work)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(jobj(work, "metadata"), "finalizers"), i, f) {
        const char *s = json_string_value(f);
        if (s && !strcmp(s, FL_EXECUTION_FINALIZER))
            return true;
    }
    return false;
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
    json_t *m = jensure(copy, "metadata");
    json_t *fins = json_object_get(m, "finalizers");
    if (!json_is_array(fins)) {
        fins = json_array();
        json_object_set_new(m, "finalizers", fins);
    }
    if (add) {
        json_array_append_new(fins, json_string(FL_EXECUTION_FINALIZER));
    } else {
        for (size_t i = json_array_size(fins); i-- > 0;) {
            const char *s = json_string_value(json_array_get(fins, i));
            if (s && !strcmp(s, FL_EXECUTION_FINALIZER))
                json_array_remove(fins, i);
        }
    }
    fl_client_error ce = {0};
    int rc = fl_client_update(x->cp, &WORKS, meta(work, "namespace"), copy, NULL, out, &ce);
    if (rc == FL_ENOTFOUND && !add)
        rc = 0; /* gone already */
    if (rc && rc != FL_ECONFLICT)
        fl_log(FL_LOG_WARN, "execution", "Work %s/%s: %s the finalizer: %s", meta(work, "namespace"),
               meta(work, "name"), add ? "adding" : "removing", ce.message[0] ? ce.message : fl_strerror(rc));
    json_decref(copy);
    return rc;
}

/* ---- ownership ---- */

enum owner { OWNER_US, OWNER_OTHER_WORK, OWNER_NONE };

/* Whose is a member object: this Work's (our label, and our Work's annotations or none),
 * another Work's, or nobody's (not managed by Flotilla/Karmada). */
static enum owner owner_of(const json_t *obj, const json_t *work)
{
    const char *managed = meta_map(obj, "labels", FL_MANAGED_LABEL);
    if (!managed || strcmp(managed, "true"))
        return OWNER_NONE;
    const char *n = meta_map(obj, "annotations", FL_WORK_NAME_ANNOTATION);
    const char *ns = meta_map(obj, "annotations", FL_WORK_NAMESPACE_ANNOTATION);
    if (!n || !ns)
        return OWNER_US;
    return !strcmp(n, meta(work, "name")) && !strcmp(ns, meta(work, "namespace")) ? OWNER_US : OWNER_OTHER_WORK;
}

/* The conflict resolution for a manifest: Karmada's binding controller writes the
 * annotation on the manifest; a Work written by hand may carry it on the Work. */
static bool overwrite_allowed(const json_t *manifest, const json_t *work)
{
    const char *v = meta_map(manifest, "annotations", FL_CONFLICT_RESOLUTION_ANNOTATION);
    if (!v)
        v = meta_map(work, "annotations", FL_CONFLICT_RESOLUTION_ANNOTATION);
    return v && !strcasecmp(v, "overwrite");
}

static void mark(json_t *obj, const json_t *work)
{
    json_t *m = jensure(obj, "metadata");
    json_object_set_new(jensure(m, "labels"), FL_MANAGED_LABEL, json_string("true"));
    json_t *ann = jensure(m, "annotations");
    json_object_set_new(ann, FL_WORK_NAME_ANNOTATION, json_string(meta(work, "name")));
    json_object_set_new(ann, FL_WORK_NAMESPACE_ANNOTATION, json_string(meta(work, "namespace")));
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
    fl_log(FL_LOG_DEBUG, "execution", "Work %s/%s: %s", meta(work, "namespace"), meta(work, "name"), msg);
    fl_event(x->recorder, work, "Warning", reason, "%s", msg);
    const char *bns = meta_map(work, "annotations", "resourcebinding.karmada.io/namespace");
    const char *rb = meta_map(work, "annotations", "resourcebinding.karmada.io/name");
    const char *crb = meta_map(work, "annotations", "clusterresourcebinding.karmada.io/name");
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

/* What a manifest addresses in its member. */
typedef struct target {
    const char *api_version, *kind, *name;
    const char *ns;            /* NULL for cluster-scoped kinds */
    char *resource;            /* heap */
    char *group;               /* heap */
    fl_gvr gvr;
    bool wrote;                /* apply_manifest created or updated the member object */
} target;

static void target_close(target *t)
{
    free(t->resource);
    free(t->group);
}

/* Resolve manifest i's kind in the member. On failure *emsg says why. */
static int target_init(fl_client *mc, const char *cluster, int i, const json_t *m, target *t, char **emsg)
{
    memset(t, 0, sizeof *t);
    t->api_version = jstr(m, "apiVersion");
    t->kind = jstr(m, "kind");
    t->name = meta(m, "name");
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
                                  ce.message[0] ? ce.message : fl_strerror(rc));
        return rc;
    }
    const char *mns = meta(m, "namespace");
    t->ns = namespaced ? (mns && *mns ? mns : "default") : NULL;
    t->group = group_of(t->api_version);
    t->gvr = (fl_gvr){t->api_version, t->resource};
    return 0;
}

/* "resource(kind=Deployment, default/web)" as Karmada words it in messages. */
static char *describe(const target *t)
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
static bool already_applied(exec *x, const json_t *m, const json_t *e, const json_t *work, const target *t)
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
    if (!meta(work, "name") || !meta(work, "namespace"))
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
                          target *t, json_t **observed, char **emsg)
{
    *observed = NULL;
    int rc = target_init(mc, cluster, i, m, t, emsg);
    if (rc)
        return rc;
    /* The member watch is for status, for noticing deletions and for knowing what the member
     * has. apply_work waited (up to LIST_GRACE_MS) for its first list; a watch still not
     * listed after that (a slow member) leaves an absent cache entry meaning only "try to
     * create": AlreadyExists then reads the object itself. */
    fl_ws_watch *wt = NULL;
    rc = fl_ws_watch_get(x->watches, cluster, mc, t->api_version, t->kind, t->resource, -1, &wt);
    if (rc) {
        *emsg = fl_asprintf("manifest %d: cluster %s: %s", i, cluster, fl_strerror(rc));
        return rc;
    }

    fl_client_error ce = {0};
    json_t *existing = NULL, *out = NULL, *desired = NULL;
    char *what = describe(t);
    if (fl_informer_get(fl_ws_watch_informer(wt), t->ns, t->name, &existing) == FL_EEXPIRED) {
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
    json_t *md = jensure(desired, "metadata");
    if (t->ns)
        json_object_set_new(md, "namespace", json_string(t->ns));
    else
        json_object_del(md, "namespace");
    mark(desired, work);
    if (!existing) {
        rc = fl_client_create(mc, &t->gvr, t->ns, desired, NULL, &out, &ce);
        if (rc == 0) {
            fl_log(FL_LOG_INFO, "execution", "created %s in cluster %s for Work %s/%s", what, cluster,
                   meta(work, "namespace"), meta(work, "name"));
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
                                what, cluster, meta_map(existing, "annotations", FL_WORK_NAMESPACE_ANNOTATION),
                                meta_map(existing, "annotations", FL_WORK_NAME_ANNOTATION));
        else
            *emsg = fl_asprintf("manifest %d: %s already exists in the cluster %s and the %s strategy value is "
                                "empty, Karmada will not manage this resource",
                                i, what, cluster, FL_CONFLICT_RESOLUTION_ANNOTATION);
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
                fl_log(FL_LOG_INFO, "execution", "%s %s in cluster %s for Work %s/%s",
                       own == OWNER_US ? "updated" : "took over", what, cluster, meta(work, "namespace"),
                       meta(work, "name"));
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
                        ce.message[0] ? ce.message : fl_strerror(rc));
done:
    free(what);
    json_decref(existing);
    json_decref(desired);
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
static bool native_rule(exec *x, const target *t, enum fl_interp_op op)
{
    return fl_interp_native_first(x->interp, t->api_version, t->kind, op) ||
           !fl_interp_has(x->interp, t->api_version, t->kind, op);
}

/* Whether the native rules (or none) answer for t's kind what an apply and its status read:
 * retain, status and health. A customization or webhook may change its answers with no
 * version moving. */
static bool native_answers(exec *x, const target *t)
{
    return native_rule(x, t, FL_INTERP_RETAIN) && native_rule(x, t, FL_INTERP_REFLECT_STATUS) &&
           native_rule(x, t, FL_INTERP_HEALTH);
}

/* The Work's manifestStatuses entry for ordinal (borrowed), or NULL. */
static const json_t *entry_of(const json_t *work, int ordinal)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(jobj(work, "status"), "manifestStatuses"), i, e) {
        json_t *o = json_object_get(jobj(e, "identifier"), "ordinal");
        if (json_is_integer(o) && json_integer_value(o) == ordinal)
            return e;
    }
    return NULL;
}

/* A copy of the Work's manifestStatuses entry for manifest `ordinal`, or NULL. */
static json_t *previous_entry(const json_t *work, int ordinal)
{
    const json_t *e = entry_of(work, ordinal);
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
    const json_t *prev = native && wrote ? NULL : entry_of(work, i);
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

static int member_client(exec *x, const char *cluster, fl_client **mc, char **emsg)
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
static json_t *manifest_entry(exec *x, const json_t *work, const char *cluster, int i, const target *t,
                              const json_t *observed)
{
    json_t *prev = previous_entry(work, i);
    char *rerr = NULL, *herr = NULL;
    json_t *e = fl_ws_manifest_status(x->interp, i, t->api_version, t->kind, t->resource, t->ns, t->name, observed,
                                      prev, &rerr, &herr);
    json_decref(prev);
    report_interp(x, work, cluster, t->kind, t->ns, t->name, rerr, herr);
    return e;
}

/* apply_work's "not yet": a member watch it needs is still making its first list. The Work
 * waits, parked on that watch, until the list is over (then the list's adds, or the watch,
 * put it back on the queue), and nothing is written. */
#define NOT_LISTED_YET 1
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
        const char *st = jstr(cond, "status");
        if (!st || strcmp(st, "True") || !json_is_integer(gen) ||
            !fl_json_same(json_object_get(cond, "observedGeneration"), gen))
            return NULL;
    }
    const json_t *entries = json_object_get(jobj(work, "status"), "manifestStatuses");
    return n && json_array_size(entries) == n ? entries : NULL;
}

/* Whether entry e records the version the watch wt holds for manifest i's object (t). */
static bool at_recorded_version(exec *x, const json_t *e, size_t i, const target *t, fl_ws_watch *wt)
{
    const char *rv = jstr(e, FL_WS_OBSERVED_RV);
    char have[64];
    return rv && strlen(rv) < sizeof have &&
           json_integer_value(json_object_get(jobj(e, "identifier"), "ordinal")) == (json_int_t)i &&
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
static void recorded_add(recorded_list *l, fl_ws_watch *wt, const target *t, const char *rv)
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
    const json_t *entries = applied_entries(work, n);
    bool listing = false, unchanged = entries != NULL;
    for (size_t i = 0; i < n && !listing; i++) {
        target t;
        char *emsg = NULL;
        fl_ws_watch *wt = NULL;
        if (target_init(mc, cluster, (int)i, json_array_get(manifests, i), &t, &emsg) == 0 &&
            fl_ws_watch_get(x->watches, cluster, mc, t.api_version, t.kind, t.resource, -1, &wt) == 0) {
            if (fl_ws_watch_listing(wt, LIST_GRACE_MS)) {
                char *key = fl_cat(meta(work, "namespace"), "/", meta(work, "name"), NULL);
                listing = fl_ws_watch_park(wt, key);
                free(key);
            }
            unchanged = unchanged && !listing && at_recorded_version(x, json_array_get(entries, i), i, &t, wt);
            fl_ws_watch_put(x->watches, wt);
        } else {
            unchanged = false;
        }
        free(emsg); /* apply_manifest reports it */
        target_close(&t);
    }
    return listing ? WATCH_LISTING : unchanged ? WATCH_UNCHANGED : WATCH_APPLY;
}

/* How long a burst lasts after the last Work joined delivery */
#define BURST_LINGER_MS 2000

/* Count a Work joining undelivered (x->mu held). */
static void count_add(exec *x, int64_t now)
{
    if (now - x->window_ms >= 1000) {
        x->adds = 0;
        x->window_ms = now;
    }
    if (++x->adds >= x->burst_works || now < x->burst_until_ms)
        x->burst_until_ms = now + BURST_LINGER_MS;
}

/* Whether Works are arriving in a burst (x->mu held): burst_works or more joined delivery
 * within a second, and others have joined since, each within BURST_LINGER_MS of the last.
 * Its pipeline pauses at times (the binding controller behind) while more Works are on
 * their way, and the Works waiting for delivery run out meanwhile. */
static bool in_burst(exec *x, int64_t now)
{
    return now < x->burst_until_ms;
}

/* Whether a manifestStatuses entry says its object is Unhealthy (not ready yet). */
static bool any_unhealthy(const json_t *statuses)
{
    size_t i;
    json_t *e;
    json_array_foreach(statuses, i, e) {
        const char *h = jstr(e, "health");
        if (h && !strcmp(h, "Unhealthy"))
            return true;
    }
    return false;
}

/* Does the first status of a Work that has just applied wait? It waits first_status_ms
 * after the first apply, for two reasons. The member reports a new object's status within
 * that time (its controllers see the create at once), so one write carries Applied and
 * the member's status, where it would be two writes in a row. And a new workload goes to
 * many clusters at once: until its Works are delivered, status writes only compete with
 * them for the CPU. So after that time it goes on waiting while other Works wait for their
 * delivery (undelivered): it is held until the last of them is tried (release_held), or
 * first_status_max_ms after its apply. A burst of new workloads is delivered first, and
 * its statuses follow. A status held so, or one due during a burst (in_burst), is written
 * once its objects are not Unhealthy (or at the cap): written when due, a third of a
 * 1,000-Deployment burst's first statuses said "not ready" and were written again a second
 * later, and the bindings' and templates' statuses with them. Only a Work with no
 * conditions yet waits, and only after an apply that succeeded: every later status
 * (a resumed Work's acknowledgement among them) and every failure is written at once.
 * Reconciles before the time that are not deliveries (the member's events for the new
 * objects) are skipped (reconcile); the one at the time writes it. */
static bool first_status_later(exec *x, const json_t *work, const json_t *statuses)
{
    if (x->first_status_ms <= 0 || json_object_get(jobj(work, "status"), "conditions"))
        return false;
    char *key = fl_informer_key(work);
    if (!key)
        return false;
    json_int_t gen = json_integer_value(json_object_get(jobj(work, "metadata"), "generation"));
    int64_t now = fl_time_now_ms(), wait = 0;
    pthread_mutex_lock(&x->mu);
    json_t *seen = json_object_get(x->first_status, key);
    int64_t cap = seen ? json_integer_value(json_array_get(seen, FS_APPLIED)) + x->first_status_max_ms : 0;
    if (!seen || json_integer_value(json_array_get(seen, FS_GENERATION)) != gen) {
        /* in enum fs_field's order */
        json_object_set_new(x->first_status, key, json_pack("[IIIbb]", gen, now + x->first_status_ms, now, 0, 0));
        wait = x->first_status_ms;
    } else if (json_integer_value(json_array_get(seen, FS_DUE)) > now) {
        wait = json_integer_value(json_array_get(seen, FS_DUE)) - now;
    } else if (json_object_size(x->undelivered) > (json_object_get(x->undelivered, key) ? 1u : 0u) && now < cap) {
        /* deliveries first: due at the cap, or sooner when they are done */
        json_array_set_new(seen, FS_DUE, json_integer(cap));
        json_array_set_new(seen, FS_HELD_NOW, json_true());
        json_array_set_new(seen, FS_HELD, json_true());
        wait = cap - now;
    } else if ((json_is_true(json_array_get(seen, FS_HELD)) || in_burst(x, now)) && now < cap &&
               any_unhealthy(statuses)) {
        /* released, its objects not ready: the member's events come through (nothing is
         * due, so they are not skipped), and the one that makes them ready writes it */
        wait = cap - now;
    } else {
        json_object_del(x->first_status, key);
    }
    pthread_mutex_unlock(&x->mu);
    /* again on every early pass: the queue keeps the earlier of two times, so this only
     * makes sure the key comes back at the time */
    if (wait > 0)
        fl_workqueue_add_after(x->q, key, wait);
    free(key);
    return wait > 0;
}

/* The last Work waiting for delivery has been tried (x->mu held): the first statuses held
 * for it are due now. Returns their keys, for the caller to queue once it has let go of mu. */
static json_t *release_held(exec *x)
{
    json_t *keys = json_array();
    const char *key;
    json_t *seen;
    int64_t now = fl_time_now_ms();
    json_object_foreach(x->first_status, key, seen) {
        if (!json_is_true(json_array_get(seen, FS_HELD_NOW)))
            continue;
        json_array_set_new(seen, FS_DUE, json_integer(now));
        json_array_set_new(seen, FS_HELD_NOW, json_false());
        json_array_append_new(keys, json_string(key));
    }
    return keys;
}

static void first_status_forget(exec *x, const char *key)
{
    pthread_mutex_lock(&x->mu);
    json_object_del(x->first_status, key);
    pthread_mutex_unlock(&x->mu);
}

static int apply_work(exec *x, const char *cluster, const json_t *listed, const fl_informer_src *src)
{
    const json_t *work = listed; /* whole once the manifests are applied (below) */
    fl_client *mc = NULL;
    char *errs = NULL;
    int rc = member_client(x, cluster, &mc, &errs);
    if (rc) {
        char *msg = fl_asprintf("Failed to apply all manifests (0/%zu): %s",
                                json_array_size(json_object_get(jobj(jobj(work, "spec"), "workload"), "manifests")),
                                errs);
        json_t *kept = fl_json_deep_copy(json_object_get(jobj(work, "status"), "manifestStatuses"));
        fl_ws_write_status(x->cp, work, false, "AppliedFailed", msg, NULL, kept);
        free(msg);
        free(errs);
        return rc;
    }

    json_t *manifests = json_object_get(jobj(jobj(work, "spec"), "workload"), "manifests");
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
    manifests = json_object_get(jobj(jobj(work, "spec"), "workload"), "manifests");
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
        target t;
        int r = apply_manifest(x, cluster, mc, work, (int)i, json_array_get(manifests, i), &t, &observed, &emsg);
        if (r == 0) {
            ok++;
            json_t *e = manifest_entry(x, work, cluster, (int)i, &t, observed);
            bool native = native_answers(x, &t) && fl_interp_edits(x->interp) == rules;
            record_version(work, (int)i, e, observed, t.wrote, native);
            const char *rv = jstr(e, FL_WS_OBSERVED_RV);
            fl_ws_watch *wt = NULL;
            if (rv && fl_ws_watch_get(x->watches, cluster, mc, t.api_version, t.kind, t.resource, -1, &wt) == 0)
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
        target_close(&t);
    }

    int wrc;
    bool stored = false; /* the status with every entry's version is stored */
    if (first_err) {
        char *msg = fl_asprintf("Failed to apply all manifests (%zu/%zu): %s", ok, n, errs);
        fl_log(FL_LOG_WARN, "execution", "Work %s/%s: %s", meta(work, "namespace"), meta(work, "name"), msg);
        wrc = fl_ws_write_status(x->cp, work, false, "AppliedFailed", msg, NULL, statuses);
        free(msg);
    } else if (first_status_later(x, work, statuses)) {
        json_decref(statuses);
        wrc = 0;
    } else {
        wrc = fl_ws_write_status(x->cp, work, true, "AppliedSuccessful", "Manifest has been successfully applied",
                                 NULL, statuses);
        stored = wrc == 0;
    }
    recorded_settle(x, &rec, stored);
    free(errs);
    json_decref(whole);
    return first_err ? first_err : wrc;
}

/* The Work is going: delete what it delivered (or, preserving, take our marks off).
 * Objects that are not this Work's are left alone. */
static int remove_manifests(exec *x, const char *cluster, const json_t *work, const fl_informer_src *src)
{
    (void)src; /* each manifest's kind and name is all it reads of them */
    fl_client *mc = NULL;
    char *emsg = NULL;
    int rc = member_client(x, cluster, &mc, &emsg);
    if (rc) {
        fl_log(FL_LOG_WARN, "execution", "Work %s/%s deleted: %s", meta(work, "namespace"), meta(work, "name"), emsg);
        free(emsg);
        return rc;
    }
    json_t *preserve = json_object_get(jobj(work, "spec"), "preserveResourcesOnDeletion");
    json_t *manifests = json_object_get(jobj(jobj(work, "spec"), "workload"), "manifests");
    size_t i;
    json_t *m;
    int first_err = 0;
    json_array_foreach(manifests, i, m) {
        target t;
        int r = target_init(mc, cluster, (int)i, m, &t, &emsg);
        if (r == FL_ENOTFOUND || r == FL_EINVAL) { /* nothing of that kind can be there */
            free(emsg);
            emsg = NULL;
            target_close(&t);
            continue;
        }
        json_t *obj = NULL;
        fl_client_error ce = {0};
        if (r == 0)
            r = fl_client_get(mc, &t.gvr, t.ns, t.name, &obj, &ce);
        if (r == 0 && owner_of(obj, work) == OWNER_US) {
            char *what = describe(&t);
            if (json_is_true(preserve)) {
                /* the object becomes the member's own: none of the control plane's marks
                 * stay (Karmada's claim cleanup; the conflict-resolution annotation stays) */
                static const char patch[] =
                    "{\"metadata\":{\"labels\":{\"" FL_MANAGED_LABEL "\":null,"
                    "\"resourcebinding.karmada.io/permanent-id\":null,"
                    "\"clusterresourcebinding.karmada.io/permanent-id\":null,"
                    "\"work.karmada.io/permanent-id\":null,"
                    "\"propagationpolicy.karmada.io/permanent-id\":null,"
                    "\"clusterpropagationpolicy.karmada.io/permanent-id\":null},"
                    "\"annotations\":{\"" FL_WORK_NAME_ANNOTATION "\":null,\"" FL_WORK_NAMESPACE_ANNOTATION "\":null,"
                    "\"resourcetemplate.karmada.io/managed-annotations\":null,"
                    "\"resourcetemplate.karmada.io/managed-labels\":null,"
                    "\"resourcetemplate.karmada.io/uid\":null,"
                    "\"resourcetemplate.karmada.io/generation\":null,"
                    "\"resourcebinding.karmada.io/namespace\":null,"
                    "\"resourcebinding.karmada.io/name\":null,"
                    "\"clusterresourcebinding.karmada.io/name\":null,"
                    "\"propagationpolicy.karmada.io/namespace\":null,"
                    "\"propagationpolicy.karmada.io/name\":null,"
                    "\"clusterpropagationpolicy.karmada.io/name\":null}}}";
                r = fl_client_patch(mc, &t.gvr, t.ns, t.name, FL_PATCH_MERGE, patch, sizeof patch - 1, NULL, NULL,
                                    &ce);
                if (r == 0)
                    fl_log(FL_LOG_INFO, "execution",
                           "released %s in cluster %s (Work %s/%s deleted, resources preserved)",
                           what, cluster, meta(work, "namespace"), meta(work, "name"));
            } else {
                fl_delete_opts del = {.propagation_policy = "Background"};
                r = fl_client_delete(mc, &t.gvr, t.ns, t.name, &del, NULL, &ce);
                if (r == 0)
                    fl_log(FL_LOG_INFO, "execution", "deleted %s in cluster %s (Work %s/%s deleted)", what, cluster,
                           meta(work, "namespace"), meta(work, "name"));
            }
            free(what);
        }
        if (r == FL_ENOTFOUND)
            r = 0;
        if (r) {
            fl_log(FL_LOG_WARN, "execution", "Work %s/%s deleted: cleaning up manifest %zu in cluster %s: %s",
                   meta(work, "namespace"), meta(work, "name"), i, cluster,
                   emsg ? emsg : ce.message[0] ? ce.message : fl_strerror(r));
            if (!first_err)
                first_err = r;
        }
        free(emsg);
        emsg = NULL;
        json_decref(obj);
        target_close(&t);
    }
    return first_err;
}

/* ---- suspension: nothing reaches the member, status collection goes on ---- */

/* The Work is suspended or its cluster paused: report what the member watches already know
 * of its manifests (no request to the member) and acknowledge with the Dispatching
 * condition. Called with no apply of this Work in flight (the queue runs one reconcile
 * per key at a time), which is what makes the acknowledgement true. */
static int report_stopped(exec *x, const char *cluster, const json_t *work, const char *reason)
{
    fl_client *mc = NULL;
    char *emsg = NULL;
    json_t *statuses = NULL;
    if (member_client(x, cluster, &mc, &emsg) == 0) {
        statuses = json_array();
        json_t *manifests = json_object_get(jobj(jobj(work, "spec"), "workload"), "manifests");
        size_t i;
        json_t *m;
        json_array_foreach(manifests, i, m) {
            target t;
            fl_ws_watch *wt = NULL;
            json_t *observed = NULL;
            int grc = FL_ENOTFOUND;
            if (target_init(mc, cluster, (int)i, m, &t, &emsg) == 0 &&
                fl_ws_watch_get(x->watches, cluster, mc, t.api_version, t.kind, t.resource, -1, &wt) == 0) {
                grc = fl_informer_get(fl_ws_watch_informer(wt), t.ns, t.name, &observed);
                fl_ws_watch_put(x->watches, wt);
            }
            const json_t *was = grc == FL_EEXPIRED ? entry_of(work, (int)i) : NULL;
            if (observed)
                json_array_append_new(statuses, manifest_entry(x, work, cluster, (int)i, &t, observed));
            else if (was) /* shed by its watch: the entry that records it is still true */
                json_array_append_new(statuses, fl_json_deep_copy(was));
            json_decref(observed);
            free(emsg);
            emsg = NULL;
            target_close(&t);
        }
    } else {
        /* the member cannot be reached: what we last knew stays */
        statuses = fl_json_deep_copy(json_object_get(jobj(work, "status"), "manifestStatuses"));
    }
    free(emsg);
    return fl_ws_write_status(x->cp, work, false, NULL, NULL, reason, statuses);
}

/* Count a worker in as delivering to cluster, unless the cluster is paused (false). */
static bool delivery_begin(exec *x, const char *cluster)
{
    fl_exec_cluster cl = {0};
    pthread_mutex_lock(&x->mu);
    x->ops.cluster(x->ops.ctx, cluster, &cl);
    if (!cl.paused) {
        json_t *n = json_object_get(x->inflight, cluster);
        json_object_set_new(x->inflight, cluster, json_integer(json_integer_value(n) + 1));
    }
    pthread_mutex_unlock(&x->mu);
    return !cl.paused;
}

/* Count the worker out; the last one out queues a Paused acknowledgement that waited. */
static void delivery_end(exec *x, const char *cluster)
{
    bool ack = false;
    pthread_mutex_lock(&x->mu);
    json_int_t n = json_integer_value(json_object_get(x->inflight, cluster)) - 1;
    if (n > 0) {
        json_object_set_new(x->inflight, cluster, json_integer(n));
    } else {
        json_object_del(x->inflight, cluster);
        ack = json_object_get(x->want_ack, cluster) != NULL;
        json_object_del(x->want_ack, cluster);
    }
    pthread_mutex_unlock(&x->mu);
    if (ack) {
        char *key = fl_asprintf("%c%s", CLUSTER_KEY_PREFIX, cluster);
        fl_workqueue_add(x->q, key);
        free(key);
    }
}

/* Write the Cluster's Paused condition: True once nothing is being delivered to a paused
 * cluster, False once delivery is back (only when a Paused condition was there). */
static int write_paused(exec *x, const char *cluster, bool paused, long long generation)
{
    json_t *cl = NULL;
    fl_client_error ce = {0};
    int rc = fl_client_get(x->cp, &CLUSTERS, NULL, cluster, &cl, &ce);
    if (rc)
        return rc == FL_ENOTFOUND ? 0 : rc;
    json_t *st = jensure(cl, "status");
    if (!paused && !fl_condition_find(json_object_get(st, "conditions"), FL_PAUSED_CONDITION))
        goto out;
    char *msg = paused ? fl_asprintf("Delivery to cluster %s is paused: no Work is being applied to it.", cluster)
                       : fl_asprintf("Delivery to cluster %s is running.", cluster);
    bool changed = fl_condition_set(st, FL_PAUSED_CONDITION, paused ? "True" : "False",
                                    paused ? "Paused" : FL_DISPATCHING_REASON, msg, generation, fl_time_now_ms());
    free(msg);
    if (changed) {
        rc = fl_client_update_status(x->cp, &CLUSTERS, NULL, cl, NULL, NULL, &ce);
        if (rc && rc != FL_ECONFLICT)
            fl_log(FL_LOG_WARN, "execution", "Cluster %s: writing the Paused condition: %s", cluster,
                   ce.message[0] ? ce.message : fl_strerror(rc));
        if (rc == 0)
            fl_log(FL_LOG_INFO, "execution", "Cluster %s: delivery %s (generation %lld)", cluster,
                   paused ? "paused" : "resumed", generation);
    }
out:
    json_decref(cl);
    return rc;
}

/* The cluster's Paused acknowledgement: written now, or, while workers are still
 * delivering to it, by the last of them to finish (delivery_end). */
static int reconcile_cluster(exec *x, const char *cluster)
{
    fl_exec_cluster cl = {0};
    pthread_mutex_lock(&x->mu);
    x->ops.cluster(x->ops.ctx, cluster, &cl);
    bool wait = cl.paused && json_object_get(x->inflight, cluster);
    if (wait)
        json_object_set_new(x->want_ack, cluster, json_true());
    pthread_mutex_unlock(&x->mu);
    if (wait || !cl.present || !cl.deliver || cl.deleting || (!cl.paused && !cl.pause_reported))
        return 0;
    return write_paused(x, cluster, cl.paused, cl.generation);
}

/* Run fn (apply_work or remove_manifests: the only two that touch the member) for the Work,
 * unless it is suspended or its cluster paused: then acknowledge that instead. *ran says
 * whether fn ran; the result is fn's, or the acknowledgement's write. */
static int deliver(exec *x, const char *cluster, const json_t *work, const fl_informer_src *src, bool suspended,
                   int (*fn)(exec *, const char *, const json_t *, const fl_informer_src *), bool *ran)
{
    *ran = false;
    if (suspended)
        return report_stopped(x, cluster, work, FL_DISPATCHING_REASON_SUSPENDED);
    if (!delivery_begin(x, cluster))
        return report_stopped(x, cluster, work, FL_DISPATCHING_REASON_CLUSTER_PAUSED);
    int rc = fn(x, cluster, work, src);
    delivery_end(x, cluster);
    *ran = true;
    return rc;
}

static int reconcile(exec *x, const char *key)
{
    if (key[0] == CLUSTER_KEY_PREFIX)
        return reconcile_cluster(x, key + 1);
    fl_metrics_count("flotilla_execution_work_reconciles_total",
                     "Works the execution controller reconciled (an agent counts its own)", 1);
    /* a pass that is not a delivery skips a Work whose first status is not due yet: the
     * pass at the time (or at the release) writes it */
    pthread_mutex_lock(&x->mu);
    json_t *pending = json_object_get(x->undelivered, key);
    json_int_t seq = pending ? json_integer_value(pending) : -1;
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
        first_status_forget(x, key);
        goto out; /* gone: the member watches go at the next sweep */
    }
    /* a copy: `work` is replaced below once our finalizer is on */
    cluster = work_cluster(work) ? fl_strdup(work_cluster(work)) : NULL;
    if (!cluster)
        goto out;
    fl_exec_cluster cl = {0};
    x->ops.cluster(x->ops.ctx, cluster, &cl);
    bool deleting = meta(work, "deletionTimestamp") != NULL;
    bool ours = has_finalizer(work);
    if (!cl.deliver) {
        /* not ours to deliver: the other mode's (its engine cleans up and takes the
         * finalizer off), or an absent cluster (it may join later; a deleted Work of a
         * cluster nobody delivers to must not hang on the finalizer) */
        if (deleting && ours && !cl.present)
            rc = set_finalizer(x, work, &src, false, NULL);
        goto out;
    }
    bool suspended = json_is_true(json_object_get(jobj(work, "spec"), "suspendDispatching"));
    if (deleting) {
        if (!ours)
            goto out;
        if (cl.deleting) {
            /* an unjoining cluster: clean up what can be reached, and never hold its Works
             * forever (a suspended or paused Work's objects stay: nothing may touch them) */
            if (!suspended && delivery_begin(x, cluster)) {
                remove_manifests(x, cluster, work, &src);
                delivery_end(x, cluster);
            }
            rc = set_finalizer(x, work, &src, false, NULL);
            goto out;
        }
        /* suspended: the member keeps what was delivered, and the Work waits (terminating)
         * until it is resumed; then the objects go and so does the Work */
        bool removed = false;
        rc = deliver(x, cluster, work, &src, suspended, remove_manifests, &removed);
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
    rc = deliver(x, cluster, work, &src, suspended, apply_work, &applied);
out:
    /* this pass tried the delivery (or found nothing to deliver), unless the member watches
     * it needs are still listing; an enqueue meanwhile stays for the next pass */
    if (seq >= 0 && rc != NOT_LISTED_YET) {
        json_t *released = NULL;
        pthread_mutex_lock(&x->mu);
        pending = json_object_get(x->undelivered, key);
        if (pending && json_integer_value(pending) == seq) {
            json_object_del(x->undelivered, key);
            if (!json_object_size(x->undelivered))
                released = release_held(x);
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
    while (fl_workqueue_get(x->q, -1, &key) == 0) {
        if (!atomic_load(&x->quit)) {
            if (reconcile(x, key) == 0)
                fl_workqueue_forget(x->q, key);
            else
                fl_workqueue_add_rate_limited(x->q, key);
        }
        fl_workqueue_done(x->q, key);
        free(key);
    }
    return NULL;
}

/* ---- member watches started ahead ---- */

/* While the Work cache makes its first list (after a restart, every Work there is), the
 * workers wait for it (fl_ctrl_wait_synced), and a member watch would only start when the
 * first Work that needs it is reconciled: the members' lists would begin after the Works'
 * list is over. Instead, the first Work that shows a (cluster, kind) puts it on a list that
 * one thread works off, starting those watches: the members list what they have while the
 * Works are still being listed, and most Works then find their watch listed. Only Works of
 * clusters this engine delivers to; a watch that no Work needs goes at the next sweep. */

/* Queue the watch of one (cluster, kind) unless it was queued before (x->mu held). */
static void ahead_queue(exec *x, const char *cluster, const char *av, const char *kind)
{
    char *k = fl_ws_use_key(cluster, av, kind);
    if (!json_object_get(x->ahead_seen, k)) {
        json_object_set_new(x->ahead_seen, k, json_true());
        json_array_append_new(x->ahead_todo, json_pack("[sss]", cluster, av, kind));
        pthread_cond_signal(&x->ahead_cv);
    }
    free(k);
}

static void add_name(void *ctx, const char *cluster)
{
    json_array_append_new(ctx, json_string(cluster));
}

/* The Work cache lists by key, so one cluster's Works come after another's: a kind seen the
 * first time is queued for every cluster the engine delivers to, or a cluster late in the
 * list would start its watches only then. That matters when a few clusters hold many Works
 * each; with many clusters the list reaches each one soon, and a kind used in a few of
 * them must not start a watch (a thread and a stream) in every one: beyond
 * AHEAD_FANOUT_MAX clusters, only the Works' own. */
#define AHEAD_FANOUT_MAX 32
static void watch_ahead(exec *x, const char *cluster, const json_t *work)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(jobj(jobj(work, "spec"), "workload"), "manifests"), i, m) {
        const char *av = jstr(m, "apiVersion"), *kind = jstr(m, "kind");
        if (!av || !kind)
            continue;
        char *kk = fl_cat("\t", av, "\t", kind, NULL); /* the kind itself, seen */
        pthread_mutex_lock(&x->mu);
        bool first = x->ahead_seen && !json_object_get(x->ahead_seen, kk);
        if (first)
            json_object_set_new(x->ahead_seen, kk, json_true());
        pthread_mutex_unlock(&x->mu);
        free(kk);
        json_t *names = json_array();
        if (first && x->ops.each_cluster) /* not under mu: it reads the clusters' cache */
            x->ops.each_cluster(x->ops.ctx, add_name, names);
        if (json_array_size(names) > AHEAD_FANOUT_MAX)
            json_array_clear(names);
        size_t j;
        json_t *n;
        pthread_mutex_lock(&x->mu);
        if (x->ahead_seen) {
            json_array_foreach(names, j, n) ahead_queue(x, json_string_value(n), av, kind);
            ahead_queue(x, cluster, av, kind);
        }
        pthread_mutex_unlock(&x->mu);
        json_decref(names);
    }
}

/* Start (and leave to the registry) the member watch for one (cluster, kind). Failures are
 * left to the reconcile, which reports them on the Work. */
static void start_watch(exec *x, const char *cluster, const char *av, const char *kind)
{
    fl_client *mc = NULL;
    char *emsg = NULL, *resource = NULL;
    bool namespaced = false;
    fl_client_error ce = {0};
    fl_ws_watch *wt = NULL;
    if (member_client(x, cluster, &mc, &emsg) == 0 &&
        fl_client_resolve(mc, av, kind, &resource, &namespaced, &ce) == 0 &&
        fl_ws_watch_get(x->watches, cluster, mc, av, kind, resource, -1, &wt) == 0)
        fl_ws_watch_put(x->watches, wt);
    free(resource);
    free(emsg);
}

/* The cluster's Works are reconciled whatever a first list says of them from now on (x->mu
 * not held). NULL: every cluster's. */
static void unresume(exec *x, const char *cluster)
{
    pthread_mutex_lock(&x->mu);
    if (cluster)
        json_object_del(x->resume_clusters, cluster);
    else
        json_object_clear(x->resume_clusters);
    pthread_mutex_unlock(&x->mu);
}

/* Start the member watches noted (fl_exec_resume) at their revisions, before any Work
 * comes: a cluster whose member cannot be had now is reconciled in full. */
static void start_resumed(exec *x)
{
    pthread_mutex_lock(&x->mu);
    json_t *todo = x->resume_todo;
    x->resume_todo = NULL;
    pthread_mutex_unlock(&x->mu);
    size_t i, n = 0;
    json_t *mk;
    json_array_foreach(todo, i, mk) {
        const char *cluster = json_string_value(json_array_get(mk, 0));
        fl_client *mc = NULL;
        char *emsg = NULL;
        if (member_client(x, cluster, &mc, &emsg) == 0 &&
            fl_ws_watch_resume(x->watches, cluster, mc, json_string_value(json_array_get(mk, 1)),
                               json_string_value(json_array_get(mk, 2)), json_string_value(json_array_get(mk, 3)),
                               json_string_value(json_array_get(mk, 4))) == 0) {
            n++;
        } else {
            fl_log(FL_LOG_INFO, "execution", "%s: its Works are checked in full", emsg ? emsg : cluster);
            fl_exec_requeue_cluster(x, cluster);
        }
        free(emsg);
    }
    if (n)
        fl_metrics_count("flotilla_execution_watches_resumed_total",
                         "Member watches started where they had been noted with the reconciled revision, "
                         "instead of listing",
                         (double)n);
    json_decref(todo);
}

/* A watch started at its noted revision had to list (workstatus.c) */
static void relisted(void *ctx, const char *cluster)
{
    fl_log(FL_LOG_INFO, "execution", "cluster %s: a member watch could not go on from where it was noted; its "
           "Works are checked in full", cluster);
    fl_exec_requeue_cluster(ctx, cluster);
}

/* The thread that starts watches ahead; it ends with the Work cache's first list. */
static void *ahead_loop(void *arg)
{
    exec *x = arg;
    pthread_setname_np(pthread_self(), "fl-exec-ahead");
    start_resumed(x);
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (!atomic_load(&x->quit) && !json_array_size(x->ahead_todo) && !fl_informer_has_synced(x->works)) {
            struct timespec t = fl_time_after(CLOCK_MONOTONIC, 100); /* the list's end does not signal: look again */
            pthread_cond_timedwait(&x->ahead_cv, &x->mu, &t);
        }
        if (atomic_load(&x->quit) || !json_array_size(x->ahead_todo))
            break;
        json_t *one = json_incref(json_array_get(x->ahead_todo, 0));
        json_array_remove(x->ahead_todo, 0);
        pthread_mutex_unlock(&x->mu);
        start_watch(x, json_string_value(json_array_get(one, 0)), json_string_value(json_array_get(one, 1)),
                    json_string_value(json_array_get(one, 2)));
        json_decref(one);
        pthread_mutex_lock(&x->mu);
    }
    /* the list is over: later Works start their watches as they are reconciled */
    json_decref(x->ahead_seen);
    json_decref(x->ahead_todo);
    x->ahead_seen = x->ahead_todo = NULL;
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* ---- informer handlers ---- */

/* Whether the Work's last apply, at its current generation, succeeded: then the member
 * watches see whatever happens to its objects (an edit, a deletion, the managed label taken
 * away) and re-queue it, and the resync has nothing to add. */
static bool settled(const json_t *w)
{
    const json_t *md = json_object_get(w, "metadata");
    if (json_object_get(md, "deletionTimestamp"))
        return false;
    const json_t *c = fl_condition_of(w, "Applied");
    const char *st = jstr(c, "status");
    return st && !strcmp(st, "True") &&
           json_integer_value(json_object_get(c, "observedGeneration")) ==
               json_integer_value(json_object_get(md, "generation"));
}

/* delivery: the Work is new, or changed in what delivery reads (not a resync's retry). It
 * waits for delivery (undelivered) unless it is settled: a Work listed again after a
 * restart, or re-queued for its cluster, that applied at its generation is re-checked, and
 * nothing new waits for that. */
static void enqueue_work(exec *x, const json_t *work, bool delivery)
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
        watch_ahead(x, cluster, work);
    char *key = fl_informer_key(work);
    if (key && delivery && !settled(work)) {
        pthread_mutex_lock(&x->mu);
        json_object_set_new(x->undelivered, key, json_integer(x->undelivered_seq++));
        count_add(x, fl_time_now_ms());
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
    enqueue_work(ctx, obj, true);
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
    enqueue_work(ctx, new_obj, true);
}

static void requeue_one(void *ctx, json_t *work)
{
    enqueue_work(ctx, work, true);
}

void fl_exec_requeue_cluster(fl_exec *x, const char *name)
{
    if (!x || !name)
        return;
    /* first: a Work listed after it is queued by its add, one before it is in the walk */
    unresume(x, name);
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
    json_array_foreach(json_object_get(jobj(jobj(w, "spec"), "workload"), "manifests"), j, m) {
        if (fl_ctrl_interp_matches(k->api_version, k->kind, jstr(m, "apiVersion"), jstr(m, "kind"))) {
            enqueue_work(k->x, w, true);
            return;
        }
    }
}

void fl_exec_requeue_kind(fl_exec *x, const char *api_version, const char *kind)
{
    if (!x)
        return;
    kind_walk k = {x, api_version, kind};
    unresume(x, NULL);
    fl_informer_each(x->works, NULL, requeue_if_kind, &k);
}

/* ---- resync ----
 *
 * Every EXEC_RESYNC_MS the resync re-queues the Works whose last apply did not settle and
 * stops the member watches no Work needs. It used to decode every Work for that, and most
 * are kept as their revisions alone (a Work a watch brought): at 50,000 Works, 3 s of CPU
 * every 30 s at rest. Now each Work's cache entry carries what it needs (work_tag): whether
 * it is settled, and which of the kind sets (the kinds its manifests name) it uses; the walk
 * reads those and decodes only the Works it re-queues. */

#define TAG_SETTLED 1u /* the rest of a tag: the kind set's index in x->kind_sets, from 1 */

/* The tag of Work w (informer thread): 0 when its manifests are not known (a Work a resumed
 * start listed bare). */
static uint32_t work_tag(void *ctx, const json_t *w)
{
    exec *x = ctx;
    const json_t *manifests = json_object_get(jobj(jobj(w, "spec"), "workload"), "manifests");
    if (!json_is_array(manifests))
        return 0;
    size_t i;
    json_t *m;
    char *names = fl_strdup("");
    json_array_foreach(manifests, i, m) {
        const char *av = jstr(m, "apiVersion"), *kind = jstr(m, "kind");
        if (!av || !kind)
            continue;
        char *more = fl_cat(names, av, "\n", kind, "\n", NULL);
        free(names);
        names = more;
    }
    pthread_mutex_lock(&x->tag_mu);
    json_t *id = json_object_get(x->kind_set_ids, names);
    json_int_t idx = id ? json_integer_value(id) : (json_int_t)json_array_size(x->kind_sets) + 1;
    if (!id) { /* a set not seen before: its kinds, in the order of names */
        json_t *kinds = json_array();
        json_array_foreach(manifests, i, m) {
            const char *av = jstr(m, "apiVersion"), *kind = jstr(m, "kind");
            if (av && kind)
                json_array_append_new(kinds, json_pack("[ss]", av, kind));
        }
        json_array_append_new(x->kind_sets, kinds);
        json_object_set_new(x->kind_set_ids, names, json_integer(idx));
    }
    pthread_mutex_unlock(&x->tag_mu);
    free(names);
    return idx < (json_int_t)(UINT32_MAX >> 1) ? (uint32_t)idx << 1 | (settled(w) ? TAG_SETTLED : 0) : 0;
}

typedef struct resync_walk {
    exec *x;
    json_t *in_use;    /* fl_ws_use_key -> true; "<cluster>\n*": all of the cluster's */
    json_t *deliver;   /* cluster -> whether the engine delivers to it, asked once */
    json_t *kind_sets; /* x->kind_sets as the walk began */
    json_t *unsettled; /* keys of the Works to re-queue */
} resync_walk;

/* One Work's entry (the Work cache read-locked: no call into it) */
static void resync_one(void *ctx, const char *key, uint32_t tag)
{
    resync_walk *r = ctx;
    size_t plen = strlen(FL_EXECUTION_SPACE_PREFIX);
    const char *slash = strchr(key, '/');
    if (strncmp(key, FL_EXECUTION_SPACE_PREFIX, plen) || !slash || slash == key + plen)
        return;
    /* only what did not apply: an apply that failed on something our watches cannot see (an
     * object of the same name that we do not manage, deleted since) is tried again at least
     * this often; a settled Work costs nothing at rest */
    if (tag && !(tag & TAG_SETTLED))
        json_array_append_new(r->unsettled, json_string(key));
    char *cluster = fl_strndup(key + plen, (size_t)(slash - (key + plen)));
    json_t *d = json_object_get(r->deliver, cluster);
    if (!d) {
        fl_exec_cluster cl = {0};
        r->x->ops.cluster(r->x->ops.ctx, cluster, &cl);
        d = json_boolean(cl.deliver);
        json_object_set_new(r->deliver, cluster, d);
    }
    const json_t *set = tag ? json_array_get(r->kind_sets, (tag >> 1) - 1) : NULL;
    if (json_is_true(d) && !tag) { /* its kinds are not known: every watch of its cluster stays */
        char *all = fl_cat(cluster, "\n*", NULL);
        json_object_set_new(r->in_use, all, json_true());
        free(all);
    }
    size_t j;
    json_t *k;
    json_array_foreach(json_is_true(d) ? set : NULL, j, k) {
        char *use = fl_ws_use_key(cluster, json_string_value(json_array_get(k, 0)),
                                  json_string_value(json_array_get(k, 1)));
        json_object_set_new(r->in_use, use, json_true());
        free(use);
    }
    free(cluster);
}

/* Every EXEC_RESYNC_MS: re-queue the Works that did not apply (resync_one), and stop the
 * member watches that no Work of a push cluster needs. */
static void *resync_loop(void *arg)
{
    exec *x = arg;
    int64_t every = fl_env_ms("FLOTILLA_EXEC_RESYNC_MS", EXEC_RESYNC_MS, 1);
    while (!fl_client_cancel_sleep(x->stop, (int)every)) {
        /* a cache still listing would stop the watches of the Works not in it yet */
        if (!fl_informer_has_synced(x->works))
            continue;
        pthread_mutex_lock(&x->tag_mu);
        json_t *sets = json_copy(x->kind_sets); /* appended to meanwhile */
        pthread_mutex_unlock(&x->tag_mu);
        resync_walk r = {x, json_object(), json_object(), sets, json_array()};
        fl_informer_each_tag(x->works, NULL, resync_one, &r);
        fl_ws_watches_sweep(x->watches, r.in_use);
        size_t i;
        json_t *k;
        json_array_foreach(r.unsettled, i, k) {
            json_t *w = NULL;
            if (fl_informer_get_key(x->works, json_string_value(k), &w) == 0 && !settled(w))
                enqueue_work(x, w, false);
            json_decref(w);
        }
        json_decref(r.in_use);
        json_decref(r.deliver);
        json_decref(r.kind_sets);
        json_decref(r.unsettled);
    }
    return NULL;
}

/* ---- resuming ---- */

void fl_exec_resume(fl_exec *x, const json_t *marks)
{
    pthread_mutex_lock(&x->mu);
    json_decref(x->resume_todo);
    x->resume_todo = json_array();
    size_t i;
    json_t *mk;
    json_array_foreach(marks, i, mk) {
        bool whole = json_array_size(mk) == 5;
        for (size_t j = 0; whole && j < 5; j++)
            whole = json_string_value(json_array_get(mk, j)) != NULL;
        if (!whole)
            continue;
        json_array_append(x->resume_todo, mk);
        json_object_set_new(x->resume_clusters, json_string_value(json_array_get(mk, 0)), json_true());
    }
    size_t nw = json_array_size(x->resume_todo), nc = json_object_size(x->resume_clusters);
    pthread_mutex_unlock(&x->mu);
    if (nw)
        fl_log(FL_LOG_INFO, "execution", "%zu member watches in %zu clusters go on from where they were noted", nw,
               nc);
}

/* Why the member watches cannot be noted now, told once a minute at most: an engine that
 * stays busy keeps every restart from resuming them. */
static void busy_told(exec *x, const char *why, size_t n)
{
    int64_t now = fl_time_mono_ms();
    if (x->busy_told_ms && now - x->busy_told_ms < 60000)
        return;
    x->busy_told_ms = now;
    fl_log(FL_LOG_INFO, "execution", "the member watches are not noted yet: %zu %s", n, why);
}

json_t *fl_exec_marks(fl_exec *x)
{
    if (!fl_informer_has_synced(x->works))
        return NULL;
    if (!fl_workqueue_idle(x->q)) {
        busy_told(x, "Works queued, or waiting to be tried again", fl_workqueue_len(x->q));
        return NULL;
    }
    pthread_mutex_lock(&x->mu);
    size_t held = json_object_size(x->first_status), undelivered = json_object_size(x->undelivered),
           todo = json_array_size(x->resume_todo);
    pthread_mutex_unlock(&x->mu);
    if (held)
        busy_told(x, "first statuses held back", held);
    else if (undelivered)
        busy_told(x, "Works not tried yet", undelivered);
    else if (todo)
        busy_told(x, "member watches still to resume", todo);
    json_t *marks = held || undelivered || todo ? NULL : fl_ws_watches_marks(x->watches);
    if (!marks && !held && !undelivered && !todo)
        busy_told(x, "member watches yet to list", 1);
    /* idle again after them: a Work an event told before them queued has been reconciled */
    if (marks && !fl_workqueue_idle(x->q)) {
        json_decref(marks);
        marks = NULL;
    }
    return marks;
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
    x->stop = fl_client_cancel_new();
    x->watches = fl_ws_watches_new(x->q);
    fl_ws_watches_on_relisted(x->watches, relisted, x);
    x->resume_clusters = json_object();
    pthread_mutex_init(&x->tag_mu, NULL);
    x->kind_sets = json_array();
    x->kind_set_ids = json_object();
    atomic_init(&x->quit, false);
    pthread_mutex_init(&x->mu, NULL);
    x->inflight = json_object();
    x->want_ack = json_object();
    x->first_status = json_object();
    x->first_status_ms = fl_env_ms("FLOTILLA_EXEC_FIRST_STATUS_MS", EXEC_FIRST_STATUS_MS, 0);
    x->first_status_max_ms = fl_env_ms("FLOTILLA_EXEC_FIRST_STATUS_MAX_MS", EXEC_FIRST_STATUS_MAX_MS, 0);
    x->undelivered = json_object();
    x->burst_works = fl_env_count("FLOTILLA_EXEC_BURST_WORKS", EXEC_BURST_WORKS, 1);
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
        rc = fl_informer_set_tagger(x->works, work_tag, x);
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
    x->ahead_started = pthread_create(&x->ahead, NULL, ahead_loop, x) == 0;
    int rc = x->works_borrowed ? 0 : fl_informer_start(x->works);
    if (rc)
        return rc;
    for (int i = 0; i < x->want_workers; i++)
        if (pthread_create(&x->workers[x->nworkers], NULL, worker, x) == 0)
            x->nworkers++;
    x->resync_started = pthread_create(&x->resync, NULL, resync_loop, x) == 0;
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
    fl_ws_watches_free(x->watches);
    if (!x->works_borrowed)
        fl_informer_free(x->works);
    fl_workqueue_free(x->q);
    fl_client_cancel_free(x->stop);
    fl_interp_free(x->own_interp);
    json_decref(x->inflight);
    json_decref(x->want_ack);
    json_decref(x->first_status);
    json_decref(x->undelivered);
    json_decref(x->ahead_seen);
    json_decref(x->ahead_todo);
    json_decref(x->resume_todo);
    json_decref(x->resume_clusters);
    json_decref(x->kind_sets);
    json_decref(x->kind_set_ids);
    pthread_mutex_destroy(&x->tag_mu);
    pthread_cond_destroy(&x->ahead_cv);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/* ---- the push controller: Works of Push clusters, members from Cluster + Secret ---- */

typedef struct push {
    fl_ctrl_env env;
    fl_exec *engine;
    fl_recorder *recorder; /* holds its Events back while Works wait for delivery */
    fl_informer *clusters;
    fl_members *members;
} push;

/* Whether the push engine delivers to the Cluster cl: every sync mode but Pull */
static bool push_delivers(const json_t *cl)
{
    const char *mode = jstr(jobj(cl, "spec"), "syncMode");
    return cl && !(mode && !strcmp(mode, "Pull"));
}

/* Deliver the Works of clusters that exist and are not in Pull mode (the agent's). */
static void push_cluster(void *ctx, const char *cluster, fl_exec_cluster *out)
{
    push *p = ctx;
    json_t *cl = NULL;
    fl_informer_get(p->clusters, NULL, cluster, &cl);
    out->present = cl != NULL;
    out->deliver = push_delivers(cl);
    out->deleting = cl && meta(cl, "deletionTimestamp");
    out->paused = cl && json_is_true(json_object_get(jobj(cl, "spec"), "suspendDispatching"));
    out->pause_reported = cl && fl_condition_of(cl, FL_PAUSED_CONDITION) != NULL;
    out->generation = cl ? (long long)json_integer_value(json_object_get(jobj(cl, "metadata"), "generation")) : 0;
    json_decref(cl);
}

typedef struct push_each {
    void (*fn)(void *fctx, const char *cluster);
    void *fctx;
} push_each;

static void push_each_one(void *ctx, json_t *cl)
{
    push_each *e = ctx;
    if (push_delivers(cl) && !meta(cl, "deletionTimestamp") && meta(cl, "name"))
        e->fn(e->fctx, meta(cl, "name"));
}

static void push_each_cluster(void *ctx, void (*fn)(void *fctx, const char *cluster), void *fctx)
{
    push *p = ctx;
    push_each e = {fn, fctx};
    fl_informer_each(p->clusters, NULL, push_each_one, &e);
}

static bool push_resumed(void *ctx, const json_t *work)
{
    push *p = ctx;
    return fl_ctrl_resumed_add(&p->env, work);
}

static json_t *push_marks(void *ctx, int64_t rev)
{
    (void)rev; /* the engine's own queue and watches say whether it is there */
    push *p = ctx;
    return fl_exec_marks(p->engine);
}

/* The member watches noted with the revision the server resumes at, of the clusters that are
 * as they were then (present, delivered to, not going, not changed since) */
static json_t *push_resumable(push *p, const json_t *noted)
{
    json_t *kept = json_array();
    size_t i;
    json_t *mk;
    json_array_foreach(noted, i, mk) {
        json_t *cl = NULL;
        const char *name = json_string_value(json_array_get(mk, 0));
        if (name && fl_informer_get(p->clusters, NULL, name, &cl) == 0 && push_delivers(cl) &&
            !meta(cl, "deletionTimestamp") && fl_ctrl_resumed_add(&p->env, cl))
            json_array_append(kept, mk);
        json_decref(cl);
    }
    return kept;
}

static int push_member(void *ctx, const char *cluster, fl_client **out, char **err)
{
    push *p = ctx;
    return fl_members_client(p->members, cluster, out, err);
}

/* A Cluster appeared, changed (syncMode, endpoint, deletion) or went: its Works decide again. */
static void cluster_added(void *ctx, json_t *obj)
{
    push *p = ctx;
    fl_exec_requeue_cluster(p->engine, meta(obj, "name"));
}

static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* status writes (health probes) change nothing for delivery */
    if (fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")) &&
        !meta(new_obj, "deletionTimestamp") == !meta(old_obj, "deletionTimestamp"))
        return;
    cluster_added(ctx, new_obj);
}

static void cluster_deleted(void *ctx, json_t *obj)
{
    cluster_added(ctx, obj);
}

/* The Cluster cache keeps no status (health probes rewrite it all the time) but the Paused
 * condition, so that a resume made while the server was down is acknowledged on restart. */
static void keep_paused_only(json_t *obj)
{
    fl_informer_drop_managed_fields(obj);
    json_t *st = json_object_get(obj, "status");
    json_t *c = fl_condition_find(json_object_get(st, "conditions"), FL_PAUSED_CONDITION);
    json_t *kept = c ? json_pack("{s:[O]}", "conditions", c) : NULL;
    if (kept)
        json_object_set_new(obj, "status", kept);
    else
        json_object_del(obj, "status");
}

static void push_stop(void *state)
{
    push *p = state;
    if (!p)
        return;
    if (p->clusters)
        fl_informer_stop(p->clusters); /* no handler touches the engine after this */
    fl_recorder_hold_while(p->recorder, NULL, NULL, 0); /* nor the recorder */
    fl_exec_free(p->engine);       /* workers read the (stopped) Cluster cache until here */
    fl_informer_free(p->clusters);
    free(p);
}

/* A customization or webhook for a kind changed: Works carrying that kind apply again
 * (retain) and report their status and health anew. */
static void push_interp_changed(void *ctx, const char *api_version, const char *kind)
{
    push *p = ctx;
    fl_exec_requeue_kind(p->engine, api_version, kind);
}

/* fl_recorder_hold_while's busy: Works wait for their delivery (see first_status_later) */
static bool delivering(void *ctx)
{
    exec *x = ctx;
    pthread_mutex_lock(&x->mu);
    bool busy = json_object_size(x->undelivered) > 0;
    pthread_mutex_unlock(&x->mu);
    return busy;
}

static int push_start(const fl_ctrl_env *env, void **state)
{
    push *p = fl_calloc(1, sizeof *p);
    *state = NULL;
    p->env = *env;
    p->members = env->members;
    fl_exec_config ec = {.cp = env->cp,
                         .interp = env->interp,
                         .recorder = env->recorder,
                         /* the Works the binding and status controllers cache too: once */
                         .works = fl_ctrl_informer(env, WORKS.api_version, WORKS.resource),
                         .rbs = fl_ctrl_informer(env, "work.karmada.io/v1alpha2", "resourcebindings"),
                         .crbs = fl_ctrl_informer(env, "work.karmada.io/v1alpha2", "clusterresourcebindings"),
                         .ops = {.cluster = push_cluster,
                                 .member = push_member,
                                 .each_cluster = push_each_cluster,
                                 .resumed = push_resumed,
                                 .ctx = p}};
    fl_informer_config cc = {
        .client = env->cp,
        .resource = CLUSTERS,
        .handlers = {.on_add = cluster_added, .on_update = cluster_updated, .on_delete = cluster_deleted, .ctx = p},
        .transform = keep_paused_only, /* delivery reads spec, deletion and the Paused condition */
    };
    int rc = fl_exec_new(&ec, &p->engine);
    if (!rc)
        rc = fl_informer_new(&cc, &p->clusters);
    if (!rc)
        rc = fl_informer_start(p->clusters);
    if (!rc) {
        /* Clusters first, so the Works' first reconciles know their clusters. Not fatal:
         * handlers and the resync catch up. */
        fl_informer_wait_synced(p->clusters, 5000);
        const json_t *noted = json_object_get(env->resumed_notes, FL_CTRL_NOTE_WATCHES);
        if (noted) {
            json_t *kept = push_resumable(p, noted);
            fl_exec_resume(p->engine, kept);
            json_decref(kept);
        }
        rc = fl_exec_start(p->engine);
    }
    if (!rc) {
        /* Events, like first statuses, come after a burst's deliveries */
        p->recorder = env->recorder;
        fl_recorder_hold_while(p->recorder, delivering, p->engine, p->engine->first_status_max_ms);
    }
    if (rc) {
        push_stop(p);
        return rc;
    }
    fl_ctrl_on_interp_change(env, push_interp_changed, p);
    fl_ctrl_note(env, FL_CTRL_NOTE_WATCHES, push_marks, p);
    *state = p;
    return 0;
}

const fl_controller fl_execution_controller = {
    .name = "execution",
    .start = push_start,
    .stop = push_stop,
};
