/* controllers.c - the list of controllers `flotilla server` runs, in start order: the
 * interpreter's customizations first (every controller after them asks the interpreter, and
 * must not answer with rules the user has replaced), then the data path from templates to
 * members (DESIGN.md) and the ResourceGroups' roll-up of the bindings' status, the
 * templates' revisions (revisions.h), then the
 * clusters' health, then failover (taint eviction and the
 * graceful eviction tasks' lifecycle). Stopped in reverse order, so the
 * customizations go last, once nothing calls the interpreter any more. */
#include "controllers/cluster.h"
#include "controllers/controller.h"
#include "controllers/execution.h"

extern const fl_controller fl_customizations_controller;
extern const fl_controller fl_detector_controller;
extern const fl_controller fl_scheduler_controller;
extern const fl_controller fl_binding_controller;
extern const fl_controller fl_binding_status_controller;
extern const fl_controller fl_resource_group_controller;
extern const fl_controller fl_dependencies_controller;
extern const fl_controller fl_namespace_sync_controller;
extern const fl_controller fl_cluster_taint_policy_controller;
extern const fl_controller fl_eviction_controller;
extern const fl_controller fl_eviction_tasks_controller;
extern const fl_controller fl_hpa_scale_target_marker_controller;
extern const fl_controller fl_revisions_controller;
extern const fl_controller fl_rollout_controller;

const fl_controller *const fl_server_controllers[] = {
    &fl_customizations_controller,
    &fl_detector_controller,
    &fl_scheduler_controller,
    &fl_binding_controller,
    &fl_dependencies_controller,
    &fl_namespace_sync_controller,
    &fl_execution_controller,
    &fl_binding_status_controller,
    &fl_resource_group_controller,
    &fl_hpa_scale_target_marker_controller,
    &fl_revisions_controller,
    &fl_rollout_controller,
    &fl_cluster_status_controller,
    &fl_cluster_taint_policy_controller,
    &fl_eviction_controller,
    &fl_eviction_tasks_controller,
    NULL,
};

const char *const fl_ctrl_note_names[] = {FL_CTRL_NOTE_WATCHES, FL_CTRL_NOTE_DEPENDENCIES, NULL};
