/* rgstatus.h - the status of kpt's ResourceGroup as Flotilla keeps it: each listed resource's
 * fleet-wide state, and the roll-up over the group (the pure part of the resource group
 * controller, resourcegroup.c; design: docs/internals/status.md).
 *
 * A listed resource is a template on the control plane. Its state is its binding's
 * status.summary state (summary.h): Current only when Current on every cluster it is bound
 * to. Without a binding it is NotFound when there is no such template (or the control plane
 * serves no such kind), and Unknown when the template exists but nothing propagates it. Two
 * kinds of object a package holds need no binding: Karmada's policies, which live on the
 * control plane only, and Namespaces, which the namespace controller keeps in every cluster;
 * they are Current when present (Terminating while being deleted). Each
 * entry of status.resourceStatuses carries that state in `status` and one condition, Ready,
 * whose message counts the clusters by state and names the worst few (bounded); what a client
 * such as kpt set in the entry (sourceHash, actuation, strategy, reconcile, conditions of
 * other types) is kept.
 *
 * The group: status.summary (ours) counts the entries by state, and the conditions
 * Reconciling and Stalled (kpt's CRD prints both) and Ready say, in kstatus's terms, what the
 * package as a whole is: in progress, failed, or Current everywhere.
 *
 * Pure functions over JSON; no I/O, no locks: any thread. */
#ifndef FL_RGSTATUS_H
#define FL_RGSTATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Clusters named in a resource's Ready message, and resources named in the group's. */
#define FL_RGSTATUS_CLUSTERS_NAMED 3
#define FL_RGSTATUS_RESOURCES_NAMED 5
/* The longest condition message, in bytes (cut at a character boundary). */
#define FL_RGSTATUS_MESSAGE_MAX 1024

/* What the controller found for a listed resource. */
enum fl_rgstatus_found {
    FL_RGSTATUS_BOUND,           /* its binding (given) */
    FL_RGSTATUS_NOT_PROPAGATED,  /* the template, but no binding */
    FL_RGSTATUS_NO_TEMPLATE,     /* no such object on the control plane */
    FL_RGSTATUS_KIND_NOT_SERVED, /* the control plane serves no such group and kind */
    FL_RGSTATUS_CONTROL_PLANE,   /* a policy: present, and meant for the control plane only */
    FL_RGSTATUS_NAMESPACE_SYNCED, /* a Namespace the namespace controller keeps in every cluster */
    FL_RGSTATUS_DELETING,        /* one of the two above, being deleted */
};

/* The resourceStatuses entry of ref (a spec.resources item: group, kind, namespace, name).
 * binding: with FL_RGSTATUS_BOUND, the binding (its status.summary and deletionTimestamp are
 * read), else ignored. prev: the entry the status had for the same resource, or NULL: its
 * client-set fields and other conditions are kept, and the Ready condition's
 * lastTransitionTime unless its status flips (now_ms then). New reference. */
json_t *fl_rgstatus_resource(const json_t *ref, enum fl_rgstatus_found found, const json_t *binding,
                             const json_t *prev, int64_t now_ms);

/* "group/kind/namespace/name" of a spec.resources item or a resourceStatuses entry, to match
 * one with the other (missing fields as ""). Heap string, caller frees. */
char *fl_rgstatus_ref_key(const json_t *ref);

/* status.summary of the entries (a resourceStatuses array): {state, total, current,
 * inProgress, terminating, unknown, notFound, failed}; state is the worst entry's (Current
 * when there is none). New reference. */
json_t *fl_rgstatus_summary(const json_t *entries);

/* Set the conditions Reconciling (an entry InProgress or Terminating), Stalled (an entry Failed
 * or NotFound) and Ready (every entry Current) in status, in that order when new, from the
 * entries; a condition's lastTransitionTime moves only when its status flips. Returns whether
 * anything in status changed. */
bool fl_rgstatus_conditions(json_t *status, const json_t *entries, int64_t now_ms);

#endif
