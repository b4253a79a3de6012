/* controller.h - how controllers plug into `flotilla server` (and later the pull agent).
 *
 * A controller is a reconcile loop over a de-duplicating work queue (src/client/
 * workqueue.h) fed by informers (src/client/informer.h), talking to the control plane
 * through an fl_client like any other client, so the agent can run the same code against
 * a remote control plane. Each controller owns its threads; the manager starts them after
 * the API serves and stops them before it goes away. State that matters lives in the
 * store (objects' status and annotations), never only in a controller's memory: a restart
 * resumes from what it lists.
 *
 * One file per controller under src/controllers/, each exporting one fl_controller. */
#ifndef FL_CONTROLLER_H
#define FL_CONTROLLER_H

#include <stdbool.h>

#include "client/client.h"

typedef struct fl_ctrl_env {
    fl_client *cp;            /* the control plane (owned by the manager; thread-safe) */
    const char *data_dir;     /* the server's data directory (NULL in the agent) */
    volatile int *stopping;   /* set when the process is shutting down */
    /* Clients for Push members, shared by every controller that talks to members, so that
     * each member has one connection pool and one discovery cache (owned by the manager,
     * which creates it and frees it after the last controller stopped). */
    struct fl_members *members;
} fl_ctrl_env;

typedef struct fl_controller {
    const char *name;
    /* Start; *state receives the controller's state. Returns 0 or an FL_E* code (the
     * manager logs it and carries on without this controller). */
    int (*start)(const fl_ctrl_env *env, void **state);
    /* Stop promptly (cancel watches, shut the queue down, join threads) and free state. */
    void (*stop)(void *state);
} fl_controller;

typedef struct fl_ctrl_manager fl_ctrl_manager;

/* Start every controller in the NULL-terminated list. *out set on every path. env is copied. */
int fl_ctrl_manager_start(const fl_ctrl_env *env, const fl_controller *const *list, fl_ctrl_manager **out);
/* Stop them in reverse order and free. NULL-safe. */
void fl_ctrl_manager_stop(fl_ctrl_manager *m);

/* The controllers the server runs, NULL-terminated (controllers.c). */
extern const fl_controller *const fl_server_controllers[];

#endif
