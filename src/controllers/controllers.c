/* controllers.c - the list of controllers `flotilla server` runs, in start order. */
#include "controllers/cluster.h"
#include "controllers/controller.h"
#include "controllers/execution.h"

const fl_controller *const fl_server_controllers[] = {
    &fl_execution_controller,
    &fl_cluster_status_controller,
    NULL,
};
