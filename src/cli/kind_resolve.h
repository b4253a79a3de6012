/* kind_resolve.h - a KIND typed as kubectl takes it (Deployment, deployment, deployments, deploy,
 * deployments.apps), resolved against the control plane's discovery, for the `flotilla ctl`
 * verbs that name a template by KIND/NAME (failover history, status). */
#ifndef FL_CLI_KIND_RESOLVE_H
#define FL_CLI_KIND_RESOLVE_H

#include <stdbool.h>

#include "client/client.h"

/* What a typed kind resolved to (heap strings; fl_cli_kind_close frees them). */
typedef struct fl_cli_kind {
    char *api_version, *resource, *kind;
    bool namespaced;
} fl_cli_kind;

/* Resolve typed with one aggregated discovery read of /api and one of /apis (preferred
 * versions only; a group only with the resource: "deployments.apps"). Returns 0 with *out
 * filled, or 1 after printing one line "flotilla ctl VERB: ..." on stderr (discovery failed,
 * or the server has no such resource type); *out is zeroed on every path first. Main thread
 * of a ctl verb. */
int fl_cli_kind_resolve(fl_client *cp, const char *typed, const char *verb, fl_cli_kind *out);
/* Free what *k holds and zero it. NULL-safe. */
void fl_cli_kind_close(fl_cli_kind *k);

#endif
