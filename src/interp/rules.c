/* rules.c - a backend's named rules, replaced copy-on-write (see rules.h). */
#include "interp/rules.h"

#include <stdlib.h>

#include "core/err.h"
#include "core/mem.h"

void fl_interp_rules_init(fl_interp_rules *r, const fl_interp_backend *vt, void *self, fl_interp_rules_ops ops)
{
    *r = (fl_interp_rules){.vt = vt, .self = self, .ops = ops};
    pthread_mutex_init(&r->wmu, NULL);
    r->cur = ops.build(self, NULL, 0);
}

void fl_interp_rules_close(fl_interp_rules *r)
{
    r->ops.drop(r->self, r->cur);
    r->cur = NULL;
    pthread_mutex_destroy(&r->wmu);
}

void fl_interp_rules_attach(fl_interp_rules *r, fl_interp *ip)
{
    pthread_mutex_lock(&r->wmu);
    if (!r->ip) {
        r->ip = ip;
        fl_interp_add_backend(ip, r->vt, r->self);
    }
    pthread_mutex_unlock(&r->wmu);
}

void fl_interp_rules_detach(fl_interp_rules *r)
{
    pthread_mutex_lock(&r->wmu);
    if (r->ip)
        fl_interp_remove_backend(r->ip, r->vt, r->self);
    r->ip = NULL;
    pthread_mutex_unlock(&r->wmu);
}

/* Install items[0..n) as the set (writer mutex held): the old ruleset is dropped once
 * no call can see it (fl_interp_swap has returned). */
static void install(fl_interp_rules *r, void **items, size_t n)
{
    void *old = fl_interp_swap(r->ip, &r->cur, r->ops.build(r->self, items, n));
    r->items = items;
    r->n = n;
    r->ops.drop(r->self, old);
}

void fl_interp_rules_put(fl_interp_rules *r, void *item)
{
    pthread_mutex_lock(&r->wmu);
    void **v = fl_malloc((r->n + 1) * sizeof *v);
    install(r, v, fl_interp_named_put(v, r->items, r->n, item));
    pthread_mutex_unlock(&r->wmu);
}

int fl_interp_rules_remove(fl_interp_rules *r, const char *name)
{
    pthread_mutex_lock(&r->wmu);
    void **v = fl_malloc((r->n ? r->n : 1) * sizeof *v);
    size_t n = fl_interp_named_drop(v, r->items, r->n, name);
    if (n == r->n) {
        free(v);
        pthread_mutex_unlock(&r->wmu);
        return FL_ENOTFOUND;
    }
    install(r, v, n);
    pthread_mutex_unlock(&r->wmu);
    return 0;
}

size_t fl_interp_rules_count(fl_interp_rules *r)
{
    pthread_mutex_lock(&r->wmu);
    size_t n = r->n;
    pthread_mutex_unlock(&r->wmu);
    return n;
}
