/* manager.c - starts and stops the controllers of a process (see controller.h). */
#include "controllers/controller.h"

#include <stdlib.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "controllers/members.h"

struct fl_ctrl_manager {
    fl_ctrl_env env;
    size_t n;
    const fl_controller **ctrl;
    void **state;
};

int fl_ctrl_manager_start(const fl_ctrl_env *env, const fl_controller *const *list, fl_ctrl_manager **out)
{
    fl_ctrl_manager *m = fl_calloc(1, sizeof *m);
    m->env = *env;
    m->env.members = fl_members_new(env->cp);
    size_t n = 0;
    while (list && list[n])
        n++;
    m->ctrl = fl_calloc(n ? n : 1, sizeof *m->ctrl);
    m->state = fl_calloc(n ? n : 1, sizeof *m->state);
    for (size_t i = 0; i < n; i++) {
        void *st = NULL;
        int rc = list[i]->start(&m->env, &st);
        if (rc) {
            fl_log(FL_LOG_ERROR, "controllers", "%s did not start: %s", list[i]->name, fl_strerror(rc));
            continue;
        }
        m->ctrl[m->n] = list[i];
        m->state[m->n] = st;
        m->n++;
        fl_log(FL_LOG_INFO, "controllers", "%s started", list[i]->name);
    }
    *out = m;
    return 0;
}

void fl_ctrl_manager_stop(fl_ctrl_manager *m)
{
    if (!m)
        return;
    for (size_t i = m->n; i-- > 0;)
        m->ctrl[i]->stop(m->state[i]);
    fl_members_free(m->env.members);
    free(m->ctrl);
    free(m->state);
    free(m);
}
