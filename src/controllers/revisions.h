/* revisions.h - the revisions controller: keeps an apps/v1 ControllerRevision for each
 * delivered change of every propagated template (docs/rollouts.md, "Revisions"; the
 * contract is in core/wellknown.h, FL_REVISION_*, and what counts as delivered in
 * revision_data.h).
 *
 * Per template that has a ResourceBinding or ClusterResourceBinding (and is not being
 * deleted):
 *   - its data (revision_data.h) names the revision that records it, <name>-<hash of data>,
 *     in its namespace (karmada-system for a cluster-scoped template), labelled with its
 *     uid and owned by it (ownerReference controller: true), so the API's garbage
 *     collection deletes the revisions with the template;
 *   - no revision of that name: one is created numbered one past the highest; one there
 *     that is not the highest (the template went back to earlier content, a rollout undo):
 *     it is renumbered one past the highest, as Kubernetes' Deployment controller renumbers
 *     a ReplicaSet it returns to;
 *   - the newest carries the template's kubernetes.io/change-cause annotation (copied when
 *     it changes, as the Deployment controller copies it to the current ReplicaSet);
 *   - beyond the template's history limit (rollouts.flotilla.io/revision-history-limit,
 *     default 10; the newest is always kept), the oldest are deleted. A limit the API did
 *     not check (stored before it refused bad ones) is a Warning event and the default.
 *
 * The store is the truth: the numbers come from the stored revisions (an index of them,
 * without data, loaded with one list when the controller starts and kept by its own writes;
 * a write that meets something else reads the template's revisions again), so a server
 * killed between a template's change and its revision makes the revision at its next start
 * (every template is reconciled then, or, at a resumed start, every template changed since
 * the controllers were last idle, which this controller's queue is part of). Besides the
 * index, memory holds a skip map: per template uid, the data hash, change cause and limit
 * its revisions were last brought to, so that a template that did not change in what it
 * delivers costs nothing.
 *
 * Leader-only, as every controller of the server. One worker thread (the server's thread
 * budget is full); no informer of its own: the templates come from the shared registry
 * (templates.h), the bindings from the shared informers. */
#ifndef FL_REVISIONS_H
#define FL_REVISIONS_H

#include "controllers/controller.h"

extern const fl_controller fl_revisions_controller;

#endif
