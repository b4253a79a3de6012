/* customizations.c - the customizations controller: puts the users' interpreter
 * customizations and webhooks into the server's resource interpreter, and makes every
 * controller that cached an answer for a kind run again when they change.
 *
 * At start it attaches three backends to the registry the manager made (env->interp,
 * native rules only), each ahead of those already there, so that a lookup asks, in
 * Karmada's order:
 *
 *     ResourceInterpreterCustomization (Lua) → webhook → bundled customizations → native
 *
 *   1. the bundled customizations (interp/bundled.h), loaded once: they never change
 *      while the server runs;
 *   2. the webhook backend (interp/webhook.h), fed ResourceInterpreterWebhookConfigurations;
 *   3. the users' Lua backend (interp/lua.h), fed ResourceInterpreterCustomizations.
 *
 * Then it watches both kinds with informers of its own, started and listed inside start(),
 * so the controllers started after it (the detector, the binding controller, ...) never
 * answer a first reconcile with rules the user has already replaced. Each object is one
 * source of rules (struct source below holds what differs between the two kinds); a
 * change is set into its backend (compiled, or checked, before anything changes: see
 * fl_lua_backend_set and fl_webhook_backend_set), a deletion removed. One worker takes
 * both kinds' keys from one queue, so the bookkeeping of what is in force needs no lock.
 *
 * An object that does not load (a script that does not compile, a webhook with a bad
 * clientConfig) stays out: the version in force before, if any, keeps answering. It gets a
 * Warning event (LoadCustomizationFailed) whose message is the engine's, naming the rule
 * and the script line (or the field), and a log line; the same rules are not reported twice.
 *
 * Change propagation: after an object is set or deleted, fl_ctrl_interp_changed() is called
 * for every (apiVersion, kind) it concerns, before and after the change (a customization
 * may move to another target; a webhook's rules may use "*"), and each controller that
 * keeps interpreter answers requeues what it derived for that kind (controller.h). A change
 * that leaves the rules alone (labels, annotations) notifies nobody.
 *
 * Queue keys: "C|name" (a customization), "W|name" (a webhook configuration). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "interp/bundled.h"
#include "interp/interp.h"
#include "interp/lua.h"
#include "interp/webhook.h"

#define LOG "customizations"
/* how long start() waits for the first list of each kind before the controllers that use
 * the interpreter start (they catch up through the change notifications anyway) */
#define FIRST_LIST_WAIT_MS 5000

/* One kind of object that carries interpreter rules, and the backend it feeds. */
typedef struct source {
    const char *kind;  /* for messages */
    fl_gvr gvr;
    char prefix;       /* queue key prefix */
    const char *rules; /* the top-level field holding the rules: "spec", "webhooks" */
    int (*set)(void *backend, const json_t *obj, char **err);
    int (*del)(void *backend, const char *name);
    /* The (apiVersion, kind) pairs obj's rules are for, into *out: an array of
     * [apiVersion or null, kind or null] (null: any). */
    void (*targets)(const json_t *obj, json_t *out);
    void *backend;
    fl_informer *inf;
    fl_workqueue *q;  /* the controller's: where the handlers put keys */
    /* worker thread only (and start(), before the worker runs) */
    json_t *in_force; /* name -> {"rules": the rules field in force, "targets": [...]} */
    json_t *rejected; /* name -> the rules field that failed to load (reported once) */
} source;

typedef struct custctl {
    fl_ctrl_env env;
    fl_lua_backend *bundled, *users;
    fl_webhook_backend *webhooks;
    source sources[2];
    int nsources;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
} custctl;

/* ---- the two sources ---- */

static int lua_set(void *b, const json_t *obj, char **err)
{
    return fl_lua_backend_set(b, obj, err);
}

static int lua_del(void *b, const char *name)
{
    return fl_lua_backend_delete(b, name);
}

static void lua_targets(const json_t *ric, json_t *out)
{
    const json_t *t = json_object_get(json_object_get(ric, "spec"), "target");
    const char *av = fl_json_str(t, "apiVersion"), *kind = fl_json_str(t, "kind");
    if (av && kind) /* the backend refused anything else */
        json_array_append_new(out, json_pack("[s, s]", av, kind));
}

static int webhook_set(void *b, const json_t *obj, char **err)
{
    return fl_webhook_backend_set(b, obj, err);
}

static int webhook_del(void *b, const char *name)
{
    return fl_webhook_backend_delete(b, name);
}

/* A rule names groups, versions and kinds, each possibly "*". A kind is concerned when its
 * group, version and kind each match; an apiVersion can be named only when group and
 * version are both exact, otherwise the change concerns the kind in any apiVersion (a
 * little more re-running than needed, for a rare event). */
static void webhook_targets(const json_t *config, json_t *out)
{
    json_t *seen = json_object();
    size_t i, j, g, v, k;
    json_t *hook, *rule, *gv, *vv, *kv;
    json_array_foreach(json_object_get(config, "webhooks"), i, hook) {
        json_array_foreach(json_object_get(hook, "rules"), j, rule) {
            json_array_foreach(json_object_get(rule, "apiGroups"), g, gv) {
                json_array_foreach(json_object_get(rule, "apiVersions"), v, vv) {
                    json_array_foreach(json_object_get(rule, "kinds"), k, kv) {
                        const char *grp = json_string_value(gv), *ver = json_string_value(vv);
                        const char *kind = json_string_value(kv);
                        if (!grp || !ver || !kind)
                            continue;
                        char *av = !strcmp(grp, "*") || !strcmp(ver, "*") ? NULL
                                   : *grp                                 ? fl_asprintf("%s/%s", grp, ver)
                                                                          : fl_strdup(ver);
                        const char *kd = strcmp(kind, "*") ? kind : NULL;
                        char *key = fl_asprintf("%s\n%s", av ? av : "*", kd ? kd : "*");
                        if (!json_object_get(seen, key)) {
                            json_object_set_new(seen, key, json_true());
                            json_array_append_new(out, json_pack("[s?, s?]", av, kd));
                        }
                        free(key);
                        free(av);
                    }
                }
            }
        }
    }
    json_decref(seen);
}

/* ---- reconcile ---- */

/* "apps.kruise.io/v1alpha1 CloneSet, ..." for messages (at most three, then a count). */
static char *describe_targets(const json_t *targets)
{
    char *out = fl_strdup("");
    size_t i, n = json_array_size(targets);
    json_t *t;
    json_array_foreach(targets, i, t) {
        if (i == 3) {
            char *more = fl_asprintf("%s and %zu more", out, n - 3);
            free(out);
            return more;
        }
        const char *av = json_string_value(json_array_get(t, 0)), *kind = json_string_value(json_array_get(t, 1));
        char *next = fl_asprintf("%s%s%s %s", out, i ? ", " : "", av ? av : "any apiVersion", kind ? kind : "any kind");
        free(out);
        out = next;
    }
    return out;
}

static void notify(custctl *c, const json_t *targets)
{
    size_t i;
    json_t *t;
    json_array_foreach(targets, i, t)
        fl_ctrl_interp_changed(&c->env, json_string_value(json_array_get(t, 0)),
                               json_string_value(json_array_get(t, 1)));
}

static int reconcile_source(custctl *c, source *s, const char *name)
{
    json_t *obj = NULL;
    fl_informer_get(s->inf, NULL, name, &obj);
    json_t *had = json_object_get(s->in_force, name); /* borrowed: read before in_force changes */
    if (!obj) {
        if (had) {
            s->del(s->backend, name);
            fl_log_kv(FL_LOG_INFO, LOG, "deleted: its rules are no longer in force", "object",
                      FL_LOG_OBJ(s->kind, NULL, name), NULL);
            json_t *old_targets = json_incref(json_object_get(had, "targets"));
            json_object_del(s->in_force, name);
            notify(c, old_targets);
            json_decref(old_targets);
        }
        json_object_del(s->rejected, name);
        return 0;
    }
    const json_t *rules = json_object_get(obj, s->rules);
    /* only the rules matter; labels and annotations change nothing */
    if (had && fl_json_same(json_object_get(had, "rules"), rules)) {
        json_object_del(s->rejected, name); /* back to the version in force */
        json_decref(obj);
        return 0;
    }
    const json_t *rejected = json_object_get(s->rejected, name);
    if (rejected && fl_json_same(rejected, rules)) {
        json_decref(obj);
        return 0; /* reported already */
    }
    char *err = NULL;
    int rc = s->set(s->backend, obj, &err);
    if (rc) {
        const char *now = had ? "the previous version stays in force" : "it is not in force";
        fl_log_kvf(FL_LOG_WARN, LOG,
                   FL_LOG_KV("object", FL_LOG_OBJ(s->kind, NULL, name), "err", err ? err : fl_strerror(rc)),
                   "not loaded (%s)", now);
        fl_event(c->env.recorder, obj, "Warning", "LoadCustomizationFailed", "%s; %s",
                 err ? err : fl_strerror(rc), now);
        json_object_set_new(s->rejected, name, rules ? fl_json_deep_copy(rules) : json_null());
        free(err);
        json_decref(obj);
        return 0; /* the object must change before it can load */
    }
    json_object_del(s->rejected, name);
    json_t *targets = json_array();
    s->targets(obj, targets);
    /* what answered before and what answers now: both may have changed */
    json_t *notified = json_array();
    json_array_extend(notified, json_object_get(had, "targets"));
    json_array_extend(notified, targets);
    char *what = describe_targets(targets);
    bool updated = had != NULL;
    json_object_set_new(s->in_force, name,
                        json_pack("{s:o, s:o}", "rules", rules ? fl_json_deep_copy(rules) : json_null(), "targets",
                                  targets));
    fl_log_kvf(FL_LOG_INFO, LOG, FL_LOG_KV("object", FL_LOG_OBJ(s->kind, NULL, name)), "%s: in force for %s",
               updated ? "updated" : "loaded", what);
    fl_event(c->env.recorder, obj, "Normal", "LoadCustomizationSucceed", "%s: its rules are in force for %s",
             updated ? "Updated" : "Loaded", what);
    free(what);
    notify(c, notified);
    json_decref(notified);
    json_decref(obj);
    return 0;
}

static int reconcile(void *ctx, const char *key)
{
    custctl *c = ctx;
    for (int i = 0; i < c->nsources; i++)
        if (key[0] == c->sources[i].prefix && key[1] == '|')
            return reconcile_source(c, &c->sources[i], key + 2);
    return 0;
}

/* ---- handlers ---- */

/* Every event of either kind only queues the object's name: the worker compares. */
static void on_add(void *ctx, json_t *obj)
{
    source *s = ctx;
    const char *name = fl_json_meta(obj, "name");
    if (!name)
        return;
    char *key = fl_asprintf("%c|%s", s->prefix, name);
    fl_workqueue_add(s->q, key);
    free(key);
}

static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)old_obj;
    on_add(ctx, new_obj);
}

/* ---- lifecycle ---- */

/* Start watching s (informer of its own) and wait for its first list. */
static int watch_source(custctl *c, source *s)
{
    s->q = c->q;
    s->in_force = json_object();
    s->rejected = json_object();
    fl_informer_config cfg = {
        .client = c->env.cp,
        .resource = s->gvr,
        .handlers = {.on_add = on_add, .on_update = on_update, .on_delete = on_add, .ctx = s},
        .transform = fl_informer_drop_managed_fields,
    };
    int rc = fl_informer_new(&cfg, &s->inf);
    if (!rc)
        rc = fl_informer_start(s->inf);
    if (rc)
        return rc;
    if (fl_informer_wait_synced(s->inf, FIRST_LIST_WAIT_MS))
        fl_log(FL_LOG_WARN, LOG, "%s not listed within %d ms: controllers start without them, and re-run once "
               "they load", s->kind, FIRST_LIST_WAIT_MS);
    /* load what is there now, before the controllers that use the interpreter start */
    json_t *all = fl_informer_list(s->inf, NULL);
    size_t i;
    json_t *o;
    json_array_foreach(all, i, o) {
        const char *name = fl_json_meta(o, "name");
        if (name)
            reconcile_source(c, s, name);
    }
    json_decref(all);
    return 0;
}

/* Whether the control plane serves kind (a kind served later is not watched until the
 * next start: both are built-in kinds of this server). */
static bool served(custctl *c, const char *api_version, const char *kind)
{
    char *resource = NULL;
    bool namespaced = false;
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    int rc = fl_client_resolve(c->env.cp, api_version, kind, &resource, &namespaced, &ce);
    free(resource);
    return rc == 0;
}

static void custctl_stop(void *state);

static int custctl_start(const fl_ctrl_env *env, void **state)
{
    custctl *c = fl_calloc(1, sizeof *c);
    c->env = *env;
    c->q = fl_workqueue_new(NULL);

    /* bundled → webhook → users', each ahead of the one before: users' are asked first */
    c->bundled = fl_bundled_attach(env->interp, LOG);
    c->webhooks = fl_webhook_backend_new(NULL);
    fl_webhook_backend_attach(c->webhooks, env->interp);
    c->users = fl_lua_backend_new("customization", NULL);
    fl_lua_backend_attach(c->users, env->interp);

    c->sources[c->nsources++] = (source){.kind = "ResourceInterpreterCustomization",
                                         .gvr = {"config.karmada.io/v1alpha1", "resourceinterpretercustomizations"},
                                         .prefix = 'C',
                                         .rules = "spec",
                                         .set = lua_set,
                                         .del = lua_del,
                                         .targets = lua_targets,
                                         .backend = c->users};
    if (served(c, "config.karmada.io/v1alpha1", "ResourceInterpreterWebhookConfiguration"))
        c->sources[c->nsources++] =
            (source){.kind = "ResourceInterpreterWebhookConfiguration",
                     .gvr = {"config.karmada.io/v1alpha1", "resourceinterpreterwebhookconfigurations"},
                     .prefix = 'W',
                     .rules = "webhooks",
                     .set = webhook_set,
                     .del = webhook_del,
                     .targets = webhook_targets,
                     .backend = c->webhooks};
    else
        fl_log(FL_LOG_WARN, LOG, "the API does not serve ResourceInterpreterWebhookConfiguration: no interpreter "
               "webhooks");
    for (int i = 0; i < c->nsources; i++) {
        int rc = watch_source(c, &c->sources[i]);
        if (rc) {
            fl_log(FL_LOG_ERROR, LOG, "cannot watch %s: %s", c->sources[i].kind, fl_strerror(rc));
            custctl_stop(c);
            *state = NULL;
            return rc;
        }
    }
    c->workers = fl_ctrl_workers_start(c->q, "customizations", 1, reconcile, c);
    *state = c;
    return 0;
}

static void custctl_stop(void *state)
{
    custctl *c = state;
    if (!c)
        return;
    for (int i = 0; i < c->nsources; i++)
        fl_informer_stop(c->sources[i].inf); /* no handler queues anything after this */
    fl_ctrl_workers_join(c->workers);
    fl_workqueue_free(c->q);
    /* every controller that calls the interpreter has stopped (they start after us) */
    fl_lua_backend_detach(c->users);
    fl_webhook_backend_detach(c->webhooks);
    fl_webhook_backend_free(c->webhooks);
    fl_lua_backend_detach(c->bundled);
    fl_lua_backend_free(c->users);
    fl_lua_backend_free(c->bundled);
    for (int i = 0; i < c->nsources; i++) {
        fl_informer_free(c->sources[i].inf);
        json_decref(c->sources[i].in_force);
        json_decref(c->sources[i].rejected);
    }
    free(c);
}

const fl_controller fl_customizations_controller = {"customizations", custctl_start, custctl_stop};
