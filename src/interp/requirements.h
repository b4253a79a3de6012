/* requirements.h - the ReplicaRequirements a customization answers with GetReplicas (a Lua
 * script's second result, a webhook's response.replicaRequirements), checked and made
 * canonical the same way whichever backend produced them, before the detector puts them on a
 * binding (spec.replicaRequirements). Pure: any thread. */
#ifndef FL_INTERP_REQUIREMENTS_H
#define FL_INTERP_REQUIREMENTS_H

#include <jansson.h>

/* Check req, an object the caller owns, as Karmada's ReplicaRequirements: nodeClaim and
 * resourceRequest objects, namespace and priorityClassName strings, nodeClaim's nodeSelector
 * and hardNodeAffinity objects and tolerations an array (null stands for absent); and rewrite
 * every resourceRequest quantity (a string, or a number as YAML gives `cpu: 1`) as its
 * canonical string, in place. 0, or FL_EINVAL with *why (heap) naming the field below req
 * ("nodeClaim.tolerations: must be an array", "resourceRequest.cpu: invalid quantity \"x\"");
 * the caller prefixes where req came from. */
int fl_interp_check_requirements(json_t *req, char **why);

/* Karmada's Component.name: at most 32 characters (the binding's schema). */
#define FL_INTERP_COMPONENT_NAME_MAX 32

/* Check comps, an array the caller owns, as the components of a template (Karmada's
 * []Component, what GetComponents answers and a binding's spec.components holds), and make
 * it canonical in place: each element an object with name (a non-empty string of at most
 * FL_INTERP_COMPONENT_NAME_MAX characters, unique in the list), replicas (an integer from 0
 * to 2^31-1) and optional replicaRequirements ({nodeClaim, resourceRequest,
 * priorityClassName}, checked and canonical as fl_interp_check_requirements; empty or null:
 * removed). Members Karmada's types do not have (a component's namespace, anything else)
 * are dropped, as Karmada's decoding drops them. 0, or FL_EINVAL with *why (heap) naming
 * the element and field ("[1].replicas: must be an integer from 0 to 2147483647",
 * "[0].replicaRequirements.resourceRequest.cpu: invalid quantity \"x\""). */
int fl_interp_check_components(json_t *comps, char **why);

#endif
