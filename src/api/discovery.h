/* discovery.h - /api, /apis, /apis/G, /api/v1, /apis/G/V, and the OpenAPI v3 documents,
 * all derived from the kind table (kinds.h). Results are cached per
 * fl_kinds_generation(); each call returns a new reference. Any thread. */
#ifndef FL_DISCOVERY_H
#define FL_DISCOVERY_H

#include <jansson.h>

json_t *fl_discovery_core_versions(void);  /* /api -> APIVersions */
json_t *fl_discovery_groups(void);         /* /apis -> APIGroupList */
json_t *fl_discovery_group(const char *group);  /* /apis/G -> APIGroup, NULL if unknown */
json_t *fl_discovery_resources(const char *group, const char *version); /* APIResourceList or NULL */
/* Aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) for /api (core=1) or /apis. */
json_t *fl_discovery_aggregated(int core);

/* /openapi/v3 -> {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}} */
json_t *fl_openapi_v3_index(void);
/* /openapi/v3/<gvpath> (gvpath "api/v1" or "apis/apps/v1") -> OpenAPI 3.0 document, NULL if unknown. */
json_t *fl_openapi_v3_doc(const char *gvpath);

#endif
