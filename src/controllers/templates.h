/* templates.h - the shared cache of resource templates, one informer per kind, started on demand.
 *
 * A template is any user object on the control plane that a PropagationPolicy may select:
 * a Deployment, a ConfigMap, a custom resource. Several controllers need them (the
 * detector matches them to policies, the binding controller copies them into Works, the
 * status controller writes their aggregated status), and none may keep a cache of its
 * own per kind: that would hold every Deployment three times. fl_templates keeps one
 * informer per kind that anything has asked for (a policy names apiVersion + kind in its
 * resourceSelectors; a binding names its resource), never for kinds nobody selects, and
 * fans each change out to every subscriber.
 *
 * Objects are cached without managedFields (they are large and no controller reads them).
 *
 * Owned by the controller manager (controller.h), shared by every controller. Thread-safe:
 * any thread may call anything here except from inside a subscriber's handler, where only
 * fl_templates_get/list (and the non-blocking fl_templates_watch with wait_ms 0) are
 * allowed. */
#ifndef FL_TEMPLATES_H
#define FL_TEMPLATES_H

#include <jansson.h>
#include <stdbool.h>

#include "client/client.h"

typedef struct fl_templates fl_templates;

/* One watched kind. Strings live as long as the registry. */
typedef struct fl_template_kind {
    const char *api_version;   /* "apps/v1" */
    const char *kind;          /* "Deployment" */
    const char *resource;      /* "deployments" */
    bool namespaced;
} fl_template_kind;

/* Change handlers; objects are borrowed and read-only (the informer's). Run on the kind's
 * informer thread, one event at a time per kind; different kinds run concurrently. */
typedef struct fl_template_handlers {
    void (*on_add)(void *ctx, const fl_template_kind *k, json_t *obj);
    void (*on_update)(void *ctx, const fl_template_kind *k, json_t *old_obj, json_t *new_obj);
    void (*on_delete)(void *ctx, const fl_template_kind *k, json_t *obj);
    void *ctx;
} fl_template_handlers;

/* cp: the control-plane client (borrowed; outlives the registry). resume_rev: as
 * fl_informer_config's, for every kind's informer (fl_ctrl_env.resumed_rev; 0 for none). */
fl_templates *fl_templates_new(fl_client *cp, int64_t resume_rev);
/* Stop every informer. Subscribers' handlers do not run after it returns. */
void fl_templates_stop(fl_templates *t);
/* Stop, then free. NULL-safe. */
void fl_templates_free(fl_templates *t);

/* Add a subscriber (until the registry is freed). Objects already cached are replayed to
 * it as adds, so subscribing late misses nothing. */
void fl_templates_subscribe(fl_templates *t, const fl_template_handlers *h);

/* Make sure the kind is watched (starting its informer the first time), and wait up to
 * wait_ms for its first list. *k (may be NULL) receives the kind's description. Returns
 * 0; FL_ENOTFOUND when the control plane does not serve the kind (a CRD not created yet:
 * call again later); FL_ETIMEDOUT when it is watched but not listed within wait_ms (the
 * informer goes on); FL_ECLOSED after stop. */
int fl_templates_watch(fl_templates *t, const char *api_version, const char *kind, int wait_ms,
                       const fl_template_kind **k);

/* Whether kind k (as handed to handlers) has finished its first list. Handlers use it to tell
 * the adds of a first list (objects that were there before anyone watched) from new objects. */
bool fl_templates_listed(fl_templates *t, const fl_template_kind *k);
/* Whether every kind watched so far has finished its first list. Any thread. */
bool fl_templates_all_listed(fl_templates *t);

/* The cached template, a new reference (read-only). FL_ENOTFOUND when the kind is not
 * watched or the object is absent; *synced (may be NULL) says whether the kind's cache has
 * listed, i.e. whether "absent" can be trusted. */
int fl_templates_get(fl_templates *t, const char *api_version, const char *kind, const char *ns, const char *name,
                     json_t **out, bool *synced);
/* Whether templates of kind k (as handed out here) keep their status in the object itself: a
 * custom resource whose CRD serves k's version without a status subresource. A status write
 * then moves the template's generation and goes to the object, not to /status. Built-in kinds
 * have the subresource. The CRD is read in process (no informer: the server's thread budget is
 * full) and the answer kept STATUS_READ_MS per kind (30 s: a CRD that gains or loses the
 * subresource is seen within that). Any thread; not from a handler. */
bool fl_templates_status_in_object(fl_templates *t, const fl_template_kind *k);

/* Every cached template of a watched kind (ns NULL: all namespaces), a new array of shared
 * read-only objects; an empty array when the kind is not watched. */
json_t *fl_templates_list(fl_templates *t, const char *api_version, const char *kind, const char *ns);

#endif
