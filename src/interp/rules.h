/* rules.h - the writer's side of a backend's named rules: the Lua customizations
 * (lua_backend.c) and the webhook configurations (webhook.c) are both a set of items kept
 * by name (fl_interp_named_put/drop), compiled into a ruleset the backend's hooks read, and
 * replaced copy-on-write under fl_interp_swap whenever an item is put or dropped.
 *
 * fl_interp_rules holds what those two shared: the writer mutex, the registry the backend
 * is attached to, the current ruleset and the item array it was built from. What a ruleset
 * is stays the backend's: it gives build and drop. Readers (the backend's hooks, called
 * under the registry's read lock) read cur and nothing else. */
#ifndef FL_INTERP_RULES_H
#define FL_INTERP_RULES_H

#include <pthread.h>
#include <stddef.h>

#include "interp/interp.h"

typedef struct fl_interp_rules_ops {
    /* A ruleset over items[0..n) (an array of pointers to structs whose first member is
     * their name, sorted by name; NULL when n is 0): the ruleset owns the array and takes
     * a hold on each item. Writer mutex held (or in init). */
    void *(*build)(void *self, void *items, size_t n);
    /* Free a ruleset that no call can see any more, and its holds (writer mutex held, or
     * in close). */
    void (*drop)(void *self, void *ruleset);
} fl_interp_rules_ops;

typedef struct fl_interp_rules {
    pthread_mutex_t wmu;           /* serialises put/drop/attach/detach */
    fl_interp *ip;                 /* attached registry, or NULL */
    const fl_interp_backend *vt;   /* what attach registers, with self */
    void *self;
    fl_interp_rules_ops ops;
    void *cur;                     /* the ruleset, read by calls under the registry's read lock */
    void *items;                   /* cur's item array (cur owns it), and its length */
    size_t n;
} fl_interp_rules;

/* Start with an empty ruleset (ops.build(self, NULL, 0)); vt and self are what attach
 * registers. Not attached. */
void fl_interp_rules_init(fl_interp_rules *r, const fl_interp_backend *vt, void *self, fl_interp_rules_ops ops);
/* Drop the current ruleset and the mutex. Detach first. */
void fl_interp_rules_close(fl_interp_rules *r);

/* Register (vt, self) with ip, once; detach removes it again. Any thread. */
void fl_interp_rules_attach(fl_interp_rules *r, fl_interp *ip);
void fl_interp_rules_detach(fl_interp_rules *r);

/* Put item (its first member, char *, is its name) in the set, replacing the item of that
 * name; the new ruleset is installed before this returns and the old one dropped. item's
 * hold is the new ruleset's (build). Any thread. */
void fl_interp_rules_put(fl_interp_rules *r, void *item);
/* Drop the item called name. Returns 0, or FL_ENOTFOUND (nothing changed). Any thread. */
int fl_interp_rules_remove(fl_interp_rules *r, const char *name);
/* How many items the set has. Any thread. */
size_t fl_interp_rules_count(fl_interp_rules *r);

#endif
