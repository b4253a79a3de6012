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

#endif
