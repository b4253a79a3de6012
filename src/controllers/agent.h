/* agent.h - the pull agent: what the server's controllers do for a Push member, done
 * from the member's side for one Pull cluster.
 *
 * `flotilla agent` (src/cli/agent_cmd.c) registers the cluster and builds two clients —
 * the control plane with the agent's identity, and the member — then runs this:
 *   - the Lease karmada-cluster/<name>, renewed every lease interval, from which the
 *     server's cluster status controller judges the cluster Ready or Unknown;
 *   - the Cluster's status: the Ready condition from the member's /readyz and, while it
 *     answers, kubernetesVersion, apiEnablements, nodeSummary and resourceSummary
 *     (the same probing code as the server's, cluster.h), written only on change;
 *   - Work delivery: the execution engine (execution.h) on the Works of
 *     karmada-es-<name> only, applied to the one member.
 * docs/agent.md is the user's side; docs/internals/execution.md the delivery.
 *
 * Settings from the environment (read at start) unless the config sets them:
 *   FLOTILLA_AGENT_LEASE_INTERVAL_MS    lease renewal (10000)
 *   FLOTILLA_AGENT_STATUS_INTERVAL_MS   member probe and status report (10000)
 *   FLOTILLA_AGENT_PROBE_TIMEOUT_MS     see agent_cmd.c: the probe client's request timeout */
#ifndef FL_AGENT_H
#define FL_AGENT_H

#include <stdint.h>

#include "client/client.h"

#define FL_AGENT_LEASE_NAMESPACE "karmada-cluster"
#define FL_AGENT_LEASE_DURATION_S 40
/* Ours, on the agent's Lease: how often the agent renews it (ms), so the control plane can
 * tell a cluster that missed two renewals (cluster.c: not reporting) long before the lease's
 * failure threshold. Without it, a quarter of leaseDurationSeconds, Karmada's renewal. */
#define FL_AGENT_RENEW_INTERVAL_ANNOTATION "flotilla.io/renew-interval-ms"

typedef struct fl_agent fl_agent;

typedef struct fl_agent_config {
    fl_client *cp;               /* the control plane, agent identity (borrowed; outlives the agent) */
    fl_client *member;           /* the member cluster, for delivery (borrowed) */
    fl_client *probe;            /* the member with a short request timeout, for status (borrowed; NULL = member) */
    const char *cluster;         /* the Cluster's name (copied) */
    int64_t lease_interval_ms;   /* 0 = environment or 10000 */
    int64_t status_interval_ms;  /* 0 = environment or 10000 */
    int workers;                 /* delivery workers; 0 = 2 */
} fl_agent_config;

/* Start every part (threads of its own); *out set on every path. Returns 0 or an FL_E*
 * code. Any thread. */
int fl_agent_start(const fl_agent_config *cfg, fl_agent **out);
/* Stop promptly (requests in flight to the control plane are cancelled; a member request
 * of a delivery may finish first) and free. NULL-safe. */
void fl_agent_stop(fl_agent *a);

#endif
