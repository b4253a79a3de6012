/* health.h - /livez, /readyz and /healthz, with kube-apiserver's checks and answers.
 *
 * Each endpoint runs a list of named checks: the API's own (ping, log, etcd: the store
 * answers a read; on /readyz also etcd-readiness: its writer is not wedged, and shutdown),
 * and those the process adds through fl_api.health_checks (the server: informer-sync and
 * poststarthook/start-controllers). GET /<endpoint> answers 200 "ok", or 500 listing every
 * check as "[+]name ok" / "[-]name failed: reason withheld" and "<endpoint> check failed";
 * ?verbose lists them on success too; ?exclude=name (repeatable) skips a check and lists it
 * as "[+]name excluded: ok"; /<endpoint>/<name> runs one check (404 for a name the endpoint
 * has not). Why a check failed goes to the log, not to the public answer.
 *
 * Probes are answered on the HTTP transport's own thread (http.c: a probe must not queue
 * behind work), so every check is quick and never waits for long: none writes anything. */
#ifndef FL_API_HEALTH_H
#define FL_API_HEALTH_H

#include <stddef.h>

struct fl_api;
struct fl_req;

/* Which endpoints run a check (a bit set). */
enum {
    FL_HEALTH_LIVEZ = 1,
    FL_HEALTH_READYZ = 2,
    FL_HEALTH_HEALTHZ = 4,
    FL_HEALTH_ALL = FL_HEALTH_LIVEZ | FL_HEALTH_READYZ | FL_HEALTH_HEALTHZ,
};

/* A check the process adds (fl_api.health_checks, an array ended by a NULL name). */
typedef struct fl_health_check {
    const char *name;     /* as kube-apiserver names its kind of check: "informer-sync" */
    unsigned endpoints;   /* FL_HEALTH_* bits */
    /* 0 when it passes; otherwise non-zero with why (cap bytes) saying what failed, for the
     * log. Any thread, concurrently (the transport's thread included): quick. */
    int (*check)(void *ctx, char *why, size_t cap);
    void *ctx;
} fl_health_check;

/* Answer r for endpoint ("livez", "readyz" or "healthz") and one check of it (NULL: all),
 * as described above. r's query holds verbose and exclude. */
void fl_health_respond(struct fl_api *api, struct fl_req *r, const char *endpoint, const char *check);

#endif
