/* namespace.c - the namespace sync controller: every user namespace exists in every member.
 *
 * A Deployment propagated into namespace team-a needs team-a in the member, and nobody writes
 * a policy for that; Karmada creates it everywhere by default and so do we. For each
 * namespace that is not skipped, one Work per Cluster in that cluster's execution space
 * carries the Namespace (with the ClusterOverridePolicies that match it), named as the
 * binding controller would name it. The execution controller (or the agent) delivers it like
 * any Work.
 *
 * Skipped, as Karmada skips them by default: "default", "kube-*", the control plane's own
 * (karmada-system, karmada-cluster) and the execution spaces; namespaces labelled
 * namespace.karmada.io/skip-auto-propagation=true; and namespaces a ClusterPropagationPolicy
 * claims (the binding path delivers those; two writers of one Work would fight).
 *
 * Our Works carry the label flotilla.io/namespace-sync (ours: Karmada relies on an owner
 * reference and the garbage collector, which we do not run) so that a deleted namespace, a
 * namespace that becomes skipped and a removed cluster leave no Work behind.
 *
 * Queue keys: the namespace name. A Cluster joining or leaving queues every namespace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/names.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/parallel.h"
#include "core/wellknown.h"
#include "interp/prune.h"
#include "policy/cluster_affinity.h"
#include "policy/override.h"

#define LOG "namespace-sync"
#define NS_WORKERS 1 /* namespaces change rarely; each sync fans out on the parallel pool */
#define WRITE_THREADS 16
#define SYNC_LABEL "flotilla.io/namespace-sync"

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};

typedef struct nsctl {
    fl_ctrl_env env;
    fl_informer *namespaces, *clusters, *works, *cops;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
} nsctl;

static bool skipped_name(const char *ns)
{
    return !strcmp(ns, "default") || !strncmp(ns, "kube-", 5) || !strcmp(ns, "karmada-system") ||
           !strcmp(ns, "karmada-cluster") || !strncmp(ns, FL_EXECUTION_SPACE_PREFIX, strlen(FL_EXECUTION_SPACE_PREFIX));
}

/* ---- handlers ---- */

static void ns_event(void *ctx, json_t *obj)
{
    nsctl *c = ctx;
    const char *name = fl_json_meta(obj, "name");
    if (name && !skipped_name(name))
        fl_workqueue_add(c->q, name);
}

static void ns_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* the namespace controller's status writes change nothing for members */
    if (fl_json_same(json_object_get(old_obj, "metadata"), json_object_get(new_obj, "metadata")) &&
        fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        return;
    ns_event(ctx, new_obj);
}

static void requeue_all(nsctl *c)
{
    json_t *all = fl_informer_list(c->namespaces, NULL);
    size_t i;
    json_t *ns;
    json_array_foreach(all, i, ns) ns_event(c, ns);
    json_decref(all);
}

static void cluster_set_changed(void *ctx, json_t *obj)
{
    (void)obj;
    requeue_all(ctx);
}

static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* ClusterOverridePolicies pick clusters by these, and a cluster being deleted keeps no
     * Work; taints and status change no Namespace */
    if (fl_policy_cluster_affinity_fields_changed(old_obj, new_obj) ||
        !fl_json_meta(old_obj, "deletionTimestamp") != !fl_json_meta(new_obj, "deletionTimestamp"))
        requeue_all(ctx);
}

static void cop_event(void *ctx, json_t *obj)
{
    (void)obj;
    requeue_all(ctx);
}

static void cop_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    if (!fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        requeue_all(ctx);
}

/* A Work of ours went away or was edited by someone: its namespace decides again. */
static void work_event(void *ctx, json_t *obj)
{
    const char *sync = fl_json_meta_map(obj, "labels", SYNC_LABEL);
    if (sync && !skipped_name(sync))
        fl_workqueue_add(((nsctl *)ctx)->q, sync);
}

static void work_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* a Work's spec moves its generation (the cached old object holds only part of it) */
    const json_t *og = json_object_get(json_object_get(old_obj, "metadata"), "generation");
    const json_t *ng = json_object_get(json_object_get(new_obj, "metadata"), "generation");
    if (json_is_integer(og) && json_is_integer(ng) ? !fl_json_same(og, ng)
                                                   : !fl_json_same(json_object_get(old_obj, "spec"),
                                                                   json_object_get(new_obj, "spec")))
        work_event(ctx, new_obj);
}

/* ---- reconcile ---- */

typedef struct sync_job {
    nsctl *c;
    const json_t *ns;
    json_t *clusters;   /* array of Cluster objects */
    json_t *cops;
    char *wname;
    int *rc;
} sync_job;

static void sync_one(void *ctx, int i)
{
    sync_job *j = ctx;
    const json_t *cluster = json_array_get(j->clusters, (size_t)i);
    const char *cname = fl_json_meta(cluster, "name");
    char *wns = fl_names_execution_space(cname);
    json_t *m = fl_json_deep_copy(j->ns), *applied = NULL, *want = NULL, *have = NULL;
    char *err = NULL, *cov = NULL, *ov = NULL;
    fl_prune(m);
    json_object_del(m, "spec"); /* the member's namespace controller owns its finalizers */
    int rc = fl_override_apply(m, cluster, j->cops, &applied, &err);
    if (rc) {
        fl_event(j->c->env.recorder, j->ns, "Warning", "SyncFailed", "Namespace to cluster %s: %s", cname, err);
        goto out;
    }
    json_t *anns = json_object();
    if (json_array_size(applied)) {
        char *aerr = NULL;
        fl_override_annotations(applied, &cov, &ov, &aerr);
        free(aerr);
        if (cov)
            json_object_set_new(anns, FL_APPLIED_CLUSTER_OVERRIDES_ANNOTATION, json_string(cov));
    }
    want = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:o, s:[s]}, s:{s:{s:[O]}}}", "apiVersion", WORKS.api_version,
                     "kind", "Work", "metadata", "name", j->wname, "namespace", wns, "labels", SYNC_LABEL,
                     fl_json_meta(j->ns, "name"), "annotations", anns, "finalizers", FL_EXECUTION_FINALIZER, "spec",
                     "workload", "manifests", m);
    char *wkey = fl_cat(wns, "/", j->wname, NULL);
    fl_informer_get_whole(j->c->works, wkey, &have); /* whole: the update starts from it */
    free(wkey);
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    if (!have) {
        rc = fl_client_create(j->c->env.cp, &WORKS, wns, want, NULL, NULL, &ce);
        if (rc == FL_EEXIST)
            rc = 0; /* the cache is behind; its event brings us back */
    } else if (!fl_json_meta(have, "deletionTimestamp")) {
        json_t *upd = fl_json_deep_copy(have);
        json_object_set(upd, "spec", json_object_get(want, "spec"));
        json_object_set(json_object_get(upd, "metadata"), "annotations", anns);
        if (!fl_json_same(upd, have))
            rc = fl_client_update(j->c->env.cp, &WORKS, wns, upd, NULL, NULL, &ce);
        json_decref(upd);
    }
    if (rc && rc != FL_ECONFLICT)
        fl_log_kv(FL_LOG_WARN, LOG, "writing the Work failed", "object", FL_LOG_OBJ("Work", wns, j->wname), "err",
                  fl_errmsg(ce.message, rc), NULL);
out:
    j->rc[i] = rc;
    free(err);
    free(cov);
    free(ov);
    free(wns);
    json_decref(m);
    json_decref(applied);
    json_decref(want);
    json_decref(have);
}

typedef struct remove_walk {
    nsctl *c;
    const char *name;
    const json_t *keep;
    int rc;
} remove_walk;

static void remove_if_ours(void *ctx, json_t *w)
{
    remove_walk *r = ctx;
    const char *sync = fl_json_meta_map(w, "labels", SYNC_LABEL);
    if (!sync || strcmp(sync, r->name) || fl_json_meta(w, "deletionTimestamp"))
        return;
    const char *wns = fl_json_meta(w, "namespace");
    bool kept = false;
    size_t j;
    json_t *cl;
    json_array_foreach(r->keep, j, cl) {
        char *es = fl_names_execution_space(fl_json_meta(cl, "name"));
        kept |= !strcmp(es, wns);
        free(es);
    }
    if (kept)
        return;
    fl_client_error ce;
    int rc = fl_client_delete(r->c->env.cp, &WORKS, wns, fl_json_meta(w, "name"), NULL, NULL, &ce);
    if (rc && rc != FL_ENOTFOUND && !r->rc)
        r->rc = rc;
}

/* Our Works of namespace name in clusters not in keep (NULL: all of them) are deleted. */
static int remove_works(nsctl *c, const char *name, const json_t *keep)
{
    remove_walk r = {c, name, keep, 0};
    fl_informer_each(c->works, NULL, remove_if_ours, &r);
    return r.rc;
}

static int reconcile(void *ctx, const char *name)
{
    nsctl *c = ctx;
    if (!fl_informer_has_synced(c->namespaces) || !fl_informer_has_synced(c->clusters) ||
        !fl_informer_has_synced(c->works) || !fl_informer_has_synced(c->cops))
        return FL_ETIMEDOUT;
    json_t *ns = NULL;
    fl_informer_get(c->namespaces, NULL, name, &ns);
    const json_t *labels = json_object_get(json_object_get(ns, "metadata"), "labels");
    const char *skip = fl_json_str(labels, FL_SKIP_AUTO_PROPAGATION_LABEL);
    bool sync = ns && !fl_json_meta(ns, "deletionTimestamp") && !(skip && !strcasecmp(skip, "true")) &&
                !fl_json_str(labels, FL_CPP_ID_LABEL);
    if (!sync) {
        int rc = remove_works(c, name, NULL);
        json_decref(ns);
        return rc;
    }
    json_t *clusters = json_array();
    json_t *all = fl_informer_list(c->clusters, NULL);
    size_t i;
    json_t *cl;
    json_array_foreach(all, i, cl)
        if (fl_json_meta(cl, "name") && !fl_json_meta(cl, "deletionTimestamp"))
            json_array_append(clusters, cl);
    json_decref(all);
    int n = (int)json_array_size(clusters);
    sync_job j = {.c = c,
                  .ns = ns,
                  .clusters = clusters,
                  .cops = fl_informer_list(c->cops, NULL),
                  .wname = fl_names_work("Namespace", NULL, name),
                  .rc = fl_calloc((size_t)(n ? n : 1), sizeof(int))};
    fl_parallel(n, WRITE_THREADS, sync_one, &j);
    int rc = 0;
    for (int x = 0; x < n && !rc; x++)
        rc = j.rc[x];
    int r = remove_works(c, name, clusters);
    if (!rc)
        rc = r;
    free(j.rc);
    free(j.wname);
    json_decref(j.cops);
    json_decref(clusters);
    json_decref(ns);
    return rc;
}

static int nsctl_start(const fl_ctrl_env *env, void **state)
{
    nsctl *c = fl_calloc(1, sizeof *c);
    c->env = *env;
    c->q = fl_workqueue_new(NULL);
    c->namespaces = fl_ctrl_informer(env, "v1", "namespaces");
    c->clusters = fl_ctrl_informer(env, "cluster.karmada.io/v1alpha1", "clusters");
    c->works = fl_ctrl_informer(env, WORKS.api_version, WORKS.resource);
    c->cops = fl_ctrl_informer(env, "policy.karmada.io/v1alpha1", "clusteroverridepolicies");
    fl_informer_handlers nh = {.on_add = ns_event, .on_update = ns_updated, .on_delete = ns_event, .ctx = c};
    fl_informer_add_handlers(c->namespaces, &nh);
    fl_informer_handlers ch = {.on_add = cluster_set_changed, .on_update = cluster_updated,
                               .on_delete = cluster_set_changed, .ctx = c};
    fl_informer_add_handlers(c->clusters, &ch);
    fl_informer_handlers wh = {.on_update = work_updated, .on_delete = work_event, .ctx = c};
    fl_informer_add_handlers(c->works, &wh);
    fl_informer_handlers oh = {.on_add = cop_event, .on_update = cop_updated, .on_delete = cop_event, .ctx = c};
    fl_informer_add_handlers(c->cops, &oh);
    c->workers = fl_ctrl_workers_start_synced(c->q, "namespace", NS_WORKERS, reconcile, c,
                                              (fl_informer *const[]){c->namespaces, c->clusters, c->works, c->cops, NULL});
    *state = c;
    return 0;
}

static void nsctl_stop(void *state)
{
    nsctl *c = state;
    fl_ctrl_workers_join(c->workers);
    fl_workqueue_free(c->q);
    free(c);
}

const fl_controller fl_namespace_sync_controller = {"namespace-sync", nsctl_start, nsctl_stop};
