/* prune.h - what of a template never goes into a Work: the fields its own API server owns.
 *
 * A template copied into a Work as is would carry the control plane's uid,
 * resourceVersion, generation, timestamps, owner references, finalizers and status,
 * none of which mean anything in a member (and some of which a member refuses). Some
 * kinds have fields the control plane's controllers filled in that a member must fill
 * in itself: a Deployment's revision annotations, a Service's allocated clusterIP, a
 * Job's generated selector, a ServiceAccount's token secrets, a PVC's selected node.
 * fl_prune removes them all, as Karmada does before it writes a Work, so that a Work is
 * only rewritten when the user's intent changed.
 *
 * Pure function: any thread. */
#ifndef FL_PRUNE_H
#define FL_PRUNE_H

#include <jansson.h>

/* Remove, in place, the fields above from obj (a template's deep copy). */
void fl_prune(json_t *obj);

#endif
