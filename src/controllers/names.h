/* names.h - the names Karmada gives the objects of the data path, in one place: a template's
 * binding, its Work, and a cluster's execution space. Every controller that has to find one
 * of them from another computes it here, so they cannot drift apart.
 *
 * All return heap strings (caller frees). Pure: any thread. */
#ifndef FL_NAMES_H
#define FL_NAMES_H

#include <jansson.h>
#include <stdbool.h>

#include "core/wellknown.h"

/* "<name>-<kind>" lowercased, ':' (RBAC names) as '.': the ResourceBinding or
 * ClusterResourceBinding of a template. */
char *fl_names_binding(const char *kind, const char *name);

/* "<name>-<8 hex digits>": the Work of a template in every execution space; the digits hash
 * namespace, name and kind so that templates of different kinds or namespaces with the same
 * name get different Works. Lowercased, ':' as '.'. ns may be NULL (cluster-scoped). */
char *fl_names_work(const char *kind, const char *ns, const char *name);

/* "karmada-es-<cluster>". */
char *fl_names_execution_space(const char *cluster);

/* Of a Work's key "karmada-es-<cluster>/<name>": the cluster (heap, caller frees) and, in
 * *name, the Work's name (borrowed from key). NULL, and *name NULL, when key names no Work
 * of an execution space (or an execution space with no cluster name). */
char *fl_names_work_key_cluster(const char *key, const char **name);
/* The same without allocating: the cluster's name in key (borrowed, *len bytes, not
 * terminated), or NULL. */
const char *fl_names_work_key_cluster_span(const char *key, size_t *len);

/* Queue keys of the controllers that reconcile bindings (scheduler, binding, binding-status):
 * "R|ns/name" for a ResourceBinding, "C|name" for a ClusterResourceBinding. */
/* ... of a binding object; NULL without a name. */
char *fl_names_binding_key(const json_t *binding);
/* ... of the binding of a template of kind (namespaced or not) named ns/name. */
char *fl_names_template_binding_key(const char *kind, bool namespaced, const char *ns, const char *name);
/* ... of the binding a Work belongs to, from the Work's annotations; NULL when it names none. */
char *fl_names_work_binding_key(const json_t *work);

#endif
