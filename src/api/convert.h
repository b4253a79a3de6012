/* convert.h - conversions between served versions of one stored kind (kinds.h,
 * fl_kind.storage_version), and the request handling that serves a version through them.
 * Internal to src/api. */
#ifndef FL_API_CONVERT_H
#define FL_API_CONVERT_H

#include <jansson.h>

/* autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscaler (convert_hpa.c): new references.
 * fl_convert_hpa_to_v2 returns NULL with *err (heap) naming the annotation it cannot read. */
json_t *fl_convert_hpa_to_v2(const json_t *v1, char **err);
json_t *fl_convert_hpa_to_v1(const json_t *v2);

/* events.k8s.io/v1 Event <-> core/v1 Event (convert_event.c): new references; never fails. */
json_t *fl_convert_event_to_core(const json_t *ev, char **err);
json_t *fl_convert_event_from_core(const json_t *ev);

#endif
