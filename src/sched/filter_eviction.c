/* filter_eviction.c - the ClusterEviction filter: a cluster that this binding is being
 * evicted from (a spec.gracefulEvictionTasks entry names it in fromCluster) is not a
 * candidate while the task is pending, whatever its purge mode, so a failover never
 * lands back on the cluster it is leaving.
 *
 * The tasks are turned into one flag per snapshot cluster when the binding is parsed;
 * tasks naming clusters the snapshot does not have are ignored. */
#include "sched/sched_priv.h"

#include "core/err.h"
#include "core/mem.h"

int fl_sched_evictions_parse(const json_t *tasks, const fl_sched_snapshot *snap, uint8_t *evicting, char **err)
{
    if (!tasks || json_is_null(tasks))
        return 0;
    if (!json_is_array(tasks)) {
        *err = fl_strdup("spec.gracefulEvictionTasks: must be an array");
        return FL_EINVAL;
    }
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        json_t *from = json_object_get(json_array_get(tasks, i), "fromCluster");
        if (!json_is_string(from)) {
            *err = fl_asprintf("spec.gracefulEvictionTasks[%zu].fromCluster: must be a string", i);
            return FL_EINVAL;
        }
        int idx = fl_sched_snapshot_find(snap, json_string_value(from));
        if (idx >= 0)
            evicting[idx] = 1;
    }
    return 0;
}

const char *fl_sched_filter_eviction(const struct fl_sched_binding *b, uint32_t idx)
{
    return b->evicting[idx] ? "cluster(s) is in the process of eviction" : NULL;
}
