/* discovery.h - /api, /apis, /apis/G, /api/v1, /apis/G/V, and the OpenAPI v2 and v3 documents,
 * all derived from the kinds one registry serves (kinds.h). reg NULL means the default
 * registry (the control plane's); a simulated member passes its own, so a CRD created
 * in one member shows only in that member's documents. Results are cached per registry
 * and fl_kindreg_generation() (registries without custom kinds share one cache); each
 * call returns a new reference that callers must treat as read-only. Any thread. */
#ifndef FL_DISCOVERY_H
#define FL_DISCOVERY_H

#include <jansson.h>

#include "api/kinds.h"

json_t *fl_discovery_core_versions(void);                /* /api -> APIVersions (the same for every registry) */
json_t *fl_discovery_groups(fl_kindreg *reg);            /* /apis -> APIGroupList */
json_t *fl_discovery_group(fl_kindreg *reg, const char *group); /* /apis/G -> APIGroup, NULL if unknown */
/* /api/V or /apis/G/V -> APIResourceList, NULL if unknown */
json_t *fl_discovery_resources(fl_kindreg *reg, const char *group, const char *version);
/* Aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) for /api (core=1) or /apis. */
json_t *fl_discovery_aggregated(fl_kindreg *reg, int core);

/* /openapi/v3 -> {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}} */
json_t *fl_openapi_v3_index(fl_kindreg *reg);
/* /openapi/v3/<gvpath> (gvpath "api/v1" or "apis/apps/v1") -> OpenAPI 3.0 document, NULL if unknown. */
json_t *fl_openapi_v3_doc(fl_kindreg *reg, const char *gvpath);
/* /openapi/v2 -> one swagger 2.0 document of every kind (JSON). */
json_t *fl_openapi_v2(fl_kindreg *reg);
/* The same document in gnostic's protobuf encoding (what client-go asks for): heap
 * bytes the caller frees, *len their length. */
char *fl_openapi_v2_pb(fl_kindreg *reg, size_t *len);

#endif
