/* agent_cmd.c - `flotilla agent`: run beside a member cluster in pull mode.
 *
 *   flotilla agent --server-kubeconfig F --member-kubeconfig F --cluster-name NAME
 *                  [--server URL[,URL...]] [--agent-kubeconfig OUT] [--server-context C]
 *                  [--member-context C]
 *
 * This file is the process around src/controllers/agent.c: it reads the kubeconfigs,
 * obtains the agent's own identity on the control plane, starts the agent and stops it
 * on SIGTERM/SIGINT (exit 0).
 *
 * Identity. The agent's credentials live in OUT (default: NAME-agent.kubeconfig beside
 * the member kubeconfig, mode 0600). If OUT exists and its token still reads Cluster
 * NAME, it is used as it is: a restarted agent reuses its identity. Otherwise the agent
 * registers with the --server-kubeconfig identity (the bootstrap kubeconfig the server
 * writes, or an admin's):
 *   POST /apis/flotilla.io/v1alpha1/register {"clusterName": NAME}
 *   -> 201 {"clusterName", "token"}; the server creates Cluster NAME with syncMode Pull,
 * and writes OUT with the control plane's address and CA from --server-kubeconfig and the
 * returned token. A control plane without that endpoint (404: older servers) gets the
 * fallback: the agent creates or updates Cluster NAME {syncMode: Pull} itself with the
 * --server-kubeconfig identity and keeps using that identity (nothing is written to
 * OUT, so an admin token is never copied). Only a 404 takes that path.
 *
 * Replicas. --server lists the URLs of a control plane's replicas (they share one CA and
 * one set of credentials). They replace the server of both kubeconfigs, and the client
 * moves to the next URL when its replica cannot be reached (client.h, options.servers):
 * the lease, the status and the Works go on through another replica when one dies. The
 * list lives only on the command line: OUT stays a standard kubeconfig (one server, the
 * URL that answered the registration), as kubectl has no cluster entry with several.
 *
 * A control plane that cannot be reached at start is retried with back-off (it may be
 * starting too); anything else that fails is one line on stderr and exit 1. */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "client/client.h"
#include "client/kubeconfig.h"
#include "controllers/agent.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/wellknown.h"

#define REGISTER_PATH "/apis/flotilla.io/v1alpha1/register"

static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

typedef struct agent_opts {
    const char *server_kc, *server_ctx, *member_kc, *member_ctx, *name, *out;
    const char *server;             /* --server: URL[,URL...] */
    const char *log_format, *log_v; /* core/log.h */
    char **servers;                 /* --server split (heap, NULL-terminated), or NULL */
} agent_opts;

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla agent --server-kubeconfig FILE --member-kubeconfig FILE --cluster-name NAME\n"
               "                      [--server URL[,URL...]] [--agent-kubeconfig FILE] [--server-context C]\n"
               "                      [--member-context C]\n"
               "\n"
               "Runs beside a member cluster in pull mode: registers it on the control plane as Cluster NAME\n"
               "(syncMode Pull), renews its lease, reports its status, and applies the Works of\n"
               FL_EXECUTION_SPACE_PREFIX "NAME to the member. Stops cleanly on SIGTERM/SIGINT.\n"
               "\n"
               "  --server-kubeconfig FILE  the control plane, with a bootstrap (or admin) identity used to register\n"
               "  --member-kubeconfig FILE  the member cluster the agent runs beside\n"
               "  --cluster-name NAME       the Cluster's name on the control plane\n"
               "  --server URL[,URL...]     the control plane's replicas (https://HOST:PORT, comma-separated),\n"
               "                            instead of the server in the kubeconfigs: when the replica the agent\n"
               "                            talks to cannot be reached, it moves to the next one. The replicas share\n"
               "                            one CA and credentials; the list is not written to any kubeconfig\n"
               "  --agent-kubeconfig FILE   the agent's own identity, reused when it still works and written\n"
               "                            after registering (default: NAME-agent.kubeconfig beside the member\n"
               "                            kubeconfig)\n"
               "  -v, --v N                 log verbosity: 0 (default) error, warn and info; 2 or more adds debug\n"
               "  --logging-format F        text (default) or json: one JSON object per line on stderr\n"
               "\n"
               "Environment: FLOTILLA_AGENT_LEASE_INTERVAL_MS (10000), FLOTILLA_AGENT_STATUS_INTERVAL_MS (10000),\n"
               "FLOTILLA_AGENT_PROBE_TIMEOUT_MS (5000).\n");
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flotilla agent: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* Karmada's rule for cluster names: a DNS-1123 label of at most 48 characters. */
static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 48)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0 && i + 1 < n)))
            return false;
    }
    return true;
}

/* --server's comma-separated URLs into o->servers. 0, or 2 after saying which is wrong. */
static int split_servers(agent_opts *o)
{
    size_t n = 1;
    for (const char *p = o->server; *p; p++)
        n += *p == ',';
    o->servers = fl_calloc(n + 1, sizeof *o->servers);
    const char *p = o->server;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(p, ",");
        o->servers[i] = fl_strndup(p, len);
        const char *u = o->servers[i];
        bool scheme = !strncmp(u, "https://", 8) || !strncmp(u, "http://", 7);
        if (!scheme || !u[strcspn(u, ":") + 3]) {
            fprintf(stderr, "flotilla agent: --server: \"%s\" is not a URL (https://HOST:PORT; several are "
                            "separated by commas)\n", u);
            return 2;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

static void servers_free(char **servers)
{
    for (size_t i = 0; servers && servers[i]; i++)
        free(servers[i]);
    free(servers);
}

static int parse(int argc, char **argv, agent_opts *o, bool *help)
{
    static const struct {
        const char *name;
        size_t off;
    } flags[] = {
        {"server-kubeconfig", offsetof(agent_opts, server_kc)}, {"server-context", offsetof(agent_opts, server_ctx)},
        {"member-kubeconfig", offsetof(agent_opts, member_kc)}, {"member-context", offsetof(agent_opts, member_ctx)},
        {"cluster-name", offsetof(agent_opts, name)},           {"agent-kubeconfig", offsetof(agent_opts, out)},
        {"logging-format", offsetof(agent_opts, log_format)},   {"v", offsetof(agent_opts, log_v)},
        {"server", offsetof(agent_opts, server)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        bool short_v = !strcmp(a, "-v") || !strncmp(a, "-v=", 3); /* klog's -v N */
        if (strncmp(a, "--", 2) && !short_v) {
            fprintf(stderr, "flotilla agent: unexpected argument \"%s\" (see 'flotilla agent --help')\n", a);
            return 2;
        }
        const char *f = a + (short_v ? 1 : 2);
        size_t n = strcspn(f, "="), k;
        for (k = 0; k < sizeof flags / sizeof flags[0]; k++)
            if (strlen(flags[k].name) == n && !strncmp(flags[k].name, f, n))
                break;
        if (k == sizeof flags / sizeof flags[0]) {
            fprintf(stderr, "flotilla agent: unknown flag %s (see 'flotilla agent --help')\n", a);
            return 2;
        }
        const char *v = f[n] == '=' ? f + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v || !*v) {
            fprintf(stderr, "flotilla agent: flag %s needs a value\n", a);
            return 2;
        }
        *(const char **)((char *)o + flags[k].off) = v;
    }
    char why[256];
    if (fl_log_configure(o->log_format, o->log_v, why, sizeof why)) {
        fprintf(stderr, "flotilla agent: %s\n", why);
        return 2;
    }
    const char *missing = !o->server_kc ? "--server-kubeconfig" : !o->member_kc ? "--member-kubeconfig"
                        : !o->name      ? "--cluster-name"
                                        : NULL;
    if (missing) {
        fprintf(stderr, "flotilla agent: %s is required (see 'flotilla agent --help')\n", missing);
        return 2;
    }
    if (!valid_name(o->name)) {
        fprintf(stderr, "flotilla agent: invalid cluster name \"%s\": 1 to 48 lower case letters, digits and '-', "
                        "starting and ending with a letter or digit\n", o->name);
        return 2;
    }
    return o->server ? split_servers(o) : 0;
}

/* A client for a kubeconfig file; servers (NULL-terminated, or NULL) replace its server.
 * On failure *err (heap) says why. */
static int client_for(const char *path, const char *ctx, char *const *servers, int timeout_ms, fl_kubeconfig *kc,
                      fl_client **out, char **err)
{
    *out = NULL;
    int rc = fl_kubeconfig_load(path, ctx, kc, err);
    if (rc == 0)
        rc = fl_client_new(kc,
                           &(fl_client_options){.user_agent = "flotilla-agent", .timeout_ms = timeout_ms,
                                                .servers = (const char *const *)servers},
                           out, err);
    return rc;
}

/* Wait up to ms for SIGTERM/SIGINT (blocked in this process). True when one came. */
static bool signalled(const sigset_t *sigs, int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    int sig = sigtimedwait(sigs, NULL, &ts);
    return sig == SIGTERM || sig == SIGINT;
}

static bool transient(int rc)
{
    return rc == FL_EIO || rc == FL_ETIMEDOUT;
}

/* The fallback for a control plane without the registration endpoint: create Cluster
 * NAME {syncMode: Pull} or bring an existing Pull one up to date. */
static int register_by_hand(fl_client *cp, const agent_opts *o, const char *member_url, fl_client_error *ce)
{
    json_t *want = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "apiVersion", CLUSTERS.api_version, "kind",
                             "Cluster", "metadata", "name", o->name, "spec", "syncMode", "Pull", "apiEndpoint",
                             member_url);
    int rc = fl_client_create(cp, &CLUSTERS, NULL, want, NULL, NULL, ce);
    for (int attempt = 0; rc == FL_EEXIST && attempt < 5; attempt++) {
        json_t *cur = NULL;
        rc = fl_client_get(cp, &CLUSTERS, NULL, o->name, &cur, ce);
        if (rc == FL_ENOTFOUND) {
            rc = fl_client_create(cp, &CLUSTERS, NULL, want, NULL, NULL, ce);
            continue;
        }
        if (rc)
            break;
        json_t *spec = json_object_get(cur, "spec");
        const char *mode = json_string_value(json_object_get(spec, "syncMode"));
        const char *ep = json_string_value(json_object_get(spec, "apiEndpoint"));
        if (mode && strcmp(mode, "Pull")) {
            json_decref(cur);
            json_decref(want);
            snprintf(ce->message, sizeof ce->message,
                     "cluster %s is registered in %s mode; unjoin it first to run an agent for it", o->name, mode);
            return FL_EINVAL;
        }
        if (mode && ep && !strcmp(ep, member_url)) {
            json_decref(cur);
            break; /* nothing to change */
        }
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(cur, "spec", spec);
        }
        json_object_set_new(spec, "syncMode", json_string("Pull"));
        json_object_set_new(spec, "apiEndpoint", json_string(member_url));
        rc = fl_client_update(cp, &CLUSTERS, NULL, cur, NULL, NULL, ce);
        json_decref(cur);
        if (rc == FL_ECONFLICT)
            rc = FL_EEXIST; /* read again */
    }
    json_decref(want);
    return rc;
}

/* The agent's control-plane client: from OUT when it works, else by registering.
 * Returns 0 with *cp, 1 on failure (said on stderr), or -1 when a signal came first. */
static int identity(const agent_opts *o, const char *out_path, const char *member_url, const sigset_t *sigs,
                    fl_client **cp)
{
    *cp = NULL;
    fl_kubeconfig kc;
    char *err = NULL;
    fl_client_error ce;
    int rc;

    /* 1. our own kubeconfig from a previous run */
    if (access(out_path, F_OK) == 0) {
        fl_client *c = NULL;
        rc = client_for(out_path, NULL, o->servers, 30000, &kc, &c, &err);
        fl_kubeconfig_close(&kc);
        for (int delay = 200; rc == 0; delay = delay < 5000 ? delay * 2 : delay) {
            char *path = fl_client_path(&CLUSTERS, NULL, o->name, NULL);
            memset(&ce, 0, sizeof ce);
            rc = fl_client_request(c, "GET", path, NULL, NULL, 0, NULL, NULL, &ce);
            free(path);
            if (!transient(rc))
                break;
            fl_log(FL_LOG_WARN, "agent", "control plane not reachable (%s); retrying", fl_errmsg(ce.message, rc));
            if (signalled(sigs, delay)) {
                fl_client_free(c);
                return -1;
            }
        }
        if (rc == 0) {
            fl_log(FL_LOG_INFO, "agent", "using the agent identity in %s", out_path);
            *cp = c;
            return 0;
        }
        fl_log(FL_LOG_WARN, "agent", "the agent kubeconfig %s does not work (%s); registering again", out_path,
               err ? err : fl_errmsg(ce.message, rc));
        free(err);
        err = NULL;
        fl_client_free(c);
    }

    /* 2. register with the server kubeconfig's identity */
    fl_client *boot = NULL;
    rc = client_for(o->server_kc, o->server_ctx, o->servers, 30000, &kc, &boot, &err);
    if (rc) {
        fail("server kubeconfig: %s", err ? err : fl_strerror(rc));
        free(err);
        fl_kubeconfig_close(&kc);
        return 1;
    }
    json_t *answer = NULL;
    char *body = fl_asprintf("{\"clusterName\":\"%s\"}", o->name); /* a DNS label: nothing to escape */
    for (int delay = 200;; delay = delay < 5000 ? delay * 2 : delay) {
        memset(&ce, 0, sizeof ce);
        rc = fl_client_request(boot, "POST", REGISTER_PATH, "application/json", body, strlen(body), NULL, &answer,
                               &ce);
        if (!transient(rc))
            break;
        fl_log(FL_LOG_WARN, "agent", "control plane %s not reachable (%s); retrying", fl_client_server(boot),
               fl_errmsg(ce.message, rc));
        if (signalled(sigs, delay)) {
            free(body);
            fl_client_free(boot);
            fl_kubeconfig_close(&kc);
            return -1;
        }
    }
    free(body);
    int ret = 1;
    if (rc == FL_ENOTFOUND) {
        /* no registration endpoint on this control plane: the documented fallback */
        rc = register_by_hand(boot, o, member_url, &ce);
        if (rc) {
            fail("registering cluster %s on %s: %s", o->name, fl_client_server(boot), fl_errmsg(ce.message, rc));
            goto out;
        }
        fl_log_kvf(FL_LOG_WARN, "agent", FL_LOG_KV("object", FL_LOG_OBJ("Cluster", NULL, o->name), "cluster", o->name),
                   "%s has no registration endpoint; registered the Cluster (Pull) with the identity in %s and "
                   "kept using it (no agent kubeconfig written)",
                   fl_client_server(boot), kc.origin);
        *cp = boot;
        boot = NULL;
        ret = 0;
        goto out;
    }
    if (rc) {
        fail("registering cluster %s on %s: %s%s", o->name, fl_client_server(boot), fl_errmsg(ce.message, rc),
             rc == FL_EEXIST ? " (its agent kubeconfig is missing or refused: give it with --agent-kubeconfig, "
                               "or unjoin the cluster first)"
                             : "");
        goto out;
    }
    const char *token = json_string_value(json_object_get(answer, "token"));
    if (!token || !*token) {
        fail("registering cluster %s on %s: the answer carries no token", o->name, fl_client_server(boot));
        goto out;
    }
    /* one server, the one that answered: --server's list stays on the command line */
    if (fl_kubeconfig_write(out_path, fl_client_server(boot), kc.insecure ? NULL : kc.ca_pem, token) != 0) {
        fail("cannot write the agent kubeconfig %s: %s", out_path, strerror(errno));
        goto out;
    }
    fl_kubeconfig agent_kc;
    rc = client_for(out_path, NULL, o->servers, 30000, &agent_kc, cp, &err);
    fl_kubeconfig_close(&agent_kc);
    if (rc) {
        fail("agent kubeconfig %s: %s", out_path, err ? err : fl_strerror(rc));
        free(err);
        goto out;
    }
    fl_log_kvf(FL_LOG_INFO, "agent", FL_LOG_KV("object", FL_LOG_OBJ("Cluster", NULL, o->name), "cluster", o->name),
               "registered cluster %s on %s; agent kubeconfig: %s", o->name, fl_client_server(boot), out_path);
    ret = 0;
out:
    json_decref(answer);
    fl_client_free(boot);
    fl_kubeconfig_close(&kc);
    return ret;
}

int fl_cmd_agent(int argc, char **argv)
{
    agent_opts o;
    memset(&o, 0, sizeof o);
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage(stdout);
        return 0;
    }
    if (rc) {
        servers_free(o.servers);
        return rc;
    }

    /* block the signals before any thread starts, so only this thread sees them */
    sigset_t sigs;
    fl_cli_block_signals(&sigs);

    int ret = 1;
    fl_kubeconfig mk;
    char *err = NULL, *out_path = NULL;
    fl_client *member = NULL, *probe = NULL, *cp = NULL;
    fl_agent *agent = NULL;
    const char *probe_env = getenv("FLOTILLA_AGENT_PROBE_TIMEOUT_MS");
    int probe_ms = probe_env && atoi(probe_env) > 0 ? atoi(probe_env) : 5000;
    rc = client_for(o.member_kc, o.member_ctx, NULL, 30000, &mk, &member, &err);
    if (rc == 0)
        rc = fl_client_new(&mk, &(fl_client_options){.user_agent = "flotilla-agent", .timeout_ms = probe_ms,
                                                     .max_idle = 2},
                           &probe, &err);
    if (rc) {
        fail("member kubeconfig: %s", err ? err : fl_strerror(rc));
        goto out;
    }
    if (o.out) {
        out_path = fl_strdup(o.out);
    } else {
        char *copy = fl_strdup(mk.origin);
        out_path = fl_asprintf("%s/%s-agent.kubeconfig", dirname(copy), o.name);
        free(copy);
    }
    rc = identity(&o, out_path, mk.server, &sigs, &cp);
    if (rc) {
        ret = rc < 0 ? 0 : 1;
        goto out;
    }
    fl_agent_config cfg = {.cp = cp, .member = member, .probe = probe, .cluster = o.name};
    rc = fl_agent_start(&cfg, &agent);
    if (rc) {
        fail("cannot start: %s", fl_strerror(rc));
        goto out;
    }
    printf("flotilla agent: cluster %s (Pull) on %s, member %s\n", o.name, fl_client_server(cp), mk.server);
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    fl_log(FL_LOG_INFO, "agent", "received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    fl_agent_stop(agent);
    fl_log(FL_LOG_INFO, "agent", "stopped");
    ret = 0;
out:
    free(err);
    free(out_path);
    fl_client_free(cp);
    fl_client_free(probe);
    fl_client_free(member);
    fl_kubeconfig_close(&mk);
    servers_free(o.servers);
    return ret;
}
