/* server_cmd.c - `flotilla server`: the control plane process.
 *
 * Opens the store in the data directory, makes sure the PKI, the bootstrap token and the
 * kubeconfigs (DIR/kubeconfig: admin; DIR/bootstrap-kubeconfig: agents) exist, loads the
 * agent tokens (auth.h), re-serves stored CRDs, creates the default namespaces, and serves
 * the API until SIGTERM/SIGINT, then shuts down gracefully: stop accepting, let requests
 * finish, end watches, close the store (every acknowledged write is already durable).
 *
 * Everything it writes is private to its user (umask 077 from the start: the data directory
 * 0700, the store and its WAL 0600, as are the keys, tokens and kubeconfigs, which set their
 * modes themselves), and one server owns a data directory at a time (DIR/server.lock).
 *
 * fl_cmd_server runs the steps below in order; each says what it sets up, and
 * server_close undoes whatever of them ran. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "api/audit.h"
#include "api/auth.h"
#include "api/authn_x509.h"
#include "api/sa_token.h"
#include "api/health.h"
#include "api/http.h"
#include "api/kinds.h"
#include "core/metrics.h"
#include "api/tls.h"
#include "cli/cli.h"
#include "cli/server_lead.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/kubeconfig.h"
#include "controllers/controller.h"
#include "controllers/eviction.h"
#include "controllers/metricsstatus.h"
#include "controllers/reconciled.h"
#include "core/env.h"
#include "core/err.h"
#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

/* The heap is trimmed once the store has stood still for QUIET_MS after QUIET_WRITES or
 * more writes (a burst, not the periodic heartbeats). */
#define QUIET_MS 3000
#define QUIET_WRITES 1000

/* Under the data directory: the store (SQLite adds -wal and -shm beside it) and the lock
 * held by the server that owns the directory. */
#define STORE_FILE "store.db"
#define LOCK_FILE "server.lock"

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla server --data-dir DIR [--listen ADDR:PORT] [--insecure-http]\n"
               "\n"
               "Runs the Flotilla control plane: Kubernetes API, store and controllers.\n"
               "\n"
               "  --data-dir DIR            where the store, certificates and kubeconfig live (required)\n"
               "  --listen ADDR:PORT        address to serve on (default 127.0.0.1:6443)\n"
               "  --insecure-http           serve plain HTTP without authentication (loopback only)\n"
               "  --max-requests-inflight N concurrent requests before answering 429 (default 400)\n"
               "  --compact-window N        revisions kept for watches (default 100000)\n"
               "  --bookmark-interval-ms N  idle time before a watch bookmark (default 60000)\n"
               "  --no-fsync                do not fsync each commit (faster, loses the last writes on power loss)\n"
               "  --tls-min-version V       VersionTLS12 (default) or VersionTLS13\n"
               "  --tls-cipher-suites LIST  comma-separated IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"
               "                            (default: ECDHE with AES-GCM or ChaCha20-Poly1305)\n"
               "  --max-object-bytes N      largest object stored, encoded (default 1572864, etcd's 1.5 MiB)\n"
               "  --etcd-servers URL[,URL]  keep the store in etcd (docs/ha.md) instead of DIR's SQLite file\n"
               "  --etcd-cafile F, --etcd-certfile F, --etcd-keyfile F   TLS to etcd\n"
               "  --etcd-prefix P           the etcd keys' prefix (default /registry)\n"
               "  --http-header-timeout S   seconds a connection has to send a request's headers (default 32)\n"
               "  --http-body-timeout S     seconds a request has to send its body after them (default 60)\n"
               "  --http-idle-timeout S     seconds an idle keep-alive connection is kept (default 90)\n"
               "  --eviction-rate R         taint evictions per second (default 0.5; 0 or less: unlimited)\n"
               "  --graceful-eviction-timeout S  seconds a Gracefully eviction task keeps the old copy at most\n"
               "                            when it sets no gracePeriodSeconds (default 600)\n"
               "  --failover-history-limit N  status.failoverHistory entries a binding keeps (default 5)\n"
               "  --shutdown-delay-duration S  seconds to keep serving after SIGTERM with /readyz failing, so\n"
               "                            load balancers stop sending first (default 0; a second signal ends it)\n"
               "  -v, --v N                 log verbosity: 0 (default) error, warn and info; 2 or more adds debug\n"
               "                            (wins over FLOTILLA_LOG)\n"
               "  --logging-format F        text (default) or json: one JSON object per line on stderr\n"
               "  --token-auth-file FILE    more bearer tokens, as kube-apiserver's: CSV lines\n"
               "                            token,user,uid[,\"group1,group2\"] (docs/access.md)\n"
               "  --client-ca-file FILE     CAs whose client certificates authenticate (CN user, O groups)\n"
               "                            (default: the server's own CA, DIR/pki/ca.crt)\n"
               "  --service-account-issuer URL  iss of the ServiceAccount tokens issued and accepted\n"
               "                            (default https://kubernetes.default.svc)\n"
               "  --api-audiences LIST      audiences a token must be for (default: the issuer)\n"
               "  --service-account-max-token-expiration D  cap on a TokenRequest's expirationSeconds\n"
               "                            (e.g. 24h; default none beyond 2^32 s)\n"
               "  --audit-policy-file FILE  an audit.k8s.io/v1 Policy: which requests the audit log records,\n"
               "                            and how much of each (without it no audit log is written)\n"
               "  --audit-log-path PATH     where audit events go, one JSON line each (\"-\": standard output)\n"
               "  --audit-log-maxsize MB    rotate the audit log before it passes MB megabytes (default 100)\n"
               "  --audit-log-maxbackup N   rotated audit logs kept (default 0: all)\n"
               "  --audit-log-maxage DAYS   rotated audit logs removed after DAYS days (default 0: never)\n"
               "  --status-prometheus-url URL  the Prometheus query API (http[s]://HOST:PORT) holding the\n"
               "                            kube-state-metrics series of the clusters annotated\n"
               "                            flotilla.io/status-source=metrics (docs/status.md; default:\n"
               "                            $FLOTILLA_STATUS_PROMETHEUS_URL)\n"
               "  --status-metrics-interval-ms N  how often it is read (default 5000; a cluster whose series\n"
               "                            stop for twice this is Unknown)\n"
               "  --status-metrics-timeout-ms N   the bound of one query (default 3000)\n"
               "\n"
               "Writes DIR/kubeconfig for kubectl: kubectl --kubeconfig DIR/kubeconfig get ns\n"
               "and DIR/bootstrap-kubeconfig for pull-mode agents (flotilla agent --server-kubeconfig ...).\n");
}

/* ---- the store, as the controllers see it (controllers/reconciled.h) ---- */

static int64_t store_head(void *ctx)
{
    return fl_store_rev(ctx);
}

static bool store_unchanged_since(void *ctx, int64_t rev)
{
    return fl_store_unchanged_since(ctx, rev);
}

static int store_note_get(void *ctx, const char *name, int64_t *value)
{
    return fl_store_note_get(ctx, name, value);
}

static int store_note_set(void *ctx, const char *name, int64_t value)
{
    return fl_store_note_set(ctx, name, value);
}

static int store_note_get_text(void *ctx, const char *name, char **text)
{
    return fl_store_note_get_text(ctx, name, text);
}

static int store_note_set_text(void *ctx, const char *name, const char *text)
{
    return fl_store_note_set_text(ctx, name, text);
}

/* ---- metrics ---- */

static double gauge_noted(void *ctx)
{
    return (double)fl_reconciled_noted(ctx);
}

static double gauge_watches_noted(void *ctx)
{
    return fl_reconciled_watches_noted(ctx) ? 1 : 0;
}

static double gauge_resumed(void *ctx)
{
    return fl_reconciled_resumed_rev(ctx) ? 1 : 0;
}

static double gauge_keys(void *ctx)
{
    return (double)fl_store_count(ctx, ""); /* every key: a counter, not a walk */
}

static double gauge_rev(void *ctx)
{
    return (double)fl_store_rev(ctx);
}

static double gauge_watches(void *ctx)
{
    return (double)fl_store_watch_count(ctx);
}

static double gauge_compact(void *ctx)
{
    return (double)fl_store_compact_rev(ctx);
}

static void free_token(char *t)
{
    if (t)
        explicit_bzero(t, strlen(t)); /* as fl_pki_close does for the admin token */
    free(t);
}

/* ---- the steps ---- */

typedef struct server_opts {
    const char *data_dir, *listen;
    const char *tls_min_version, *tls_cipher_suites; /* as given; checked by parse_args */
    bool insecure, no_fsync;
    int max_inflight, bookmark_ms;
    int header_timeout_s, body_timeout_s, idle_timeout_s;
    long long window;
    size_t max_object_bytes; /* 0: the API's default */
    double eviction_rate;    /* controllers/eviction.h */
    long long eviction_timeout_s;
    long long failover_history_limit;
    long long shutdown_delay_s; /* --shutdown-delay-duration */
    const char *token_auth_file; /* --token-auth-file, or NULL */
    const char *client_ca_file;  /* --client-ca-file, or NULL: DIR/pki/ca.crt */
    const char *sa_issuer, *api_audiences; /* NULL: the defaults (sa_token.h) */
    long long sa_max_seconds;    /* --service-account-max-token-expiration; 0: none */
    fl_audit_config audit;       /* --audit-*: api/audit.h */
    const char *prometheus_url;  /* --status-prometheus-url, or NULL */
    long long metrics_interval_ms, metrics_timeout_ms; /* 0: controllers/metricsstatus.h's */
    /* --etcd-servers (NULL: the SQLite store in the data directory) and its TLS files and
     * key prefix, as kube-apiserver's flags of the same names */
    const char *etcd_servers, *etcd_cafile, *etcd_certfile, *etcd_keyfile, *etcd_prefix;
} server_opts;

/* What the steps set up, torn down by server_close. Lives in fl_cmd_server's frame, which
 * outlasts every thread the steps start. */
typedef struct server {
    server_opts o;
    fl_lead *lead;  /* with a shared store: the campaign for the controllers' lead */
    bool lost_lead; /* a new campaign could not start: the process stops with status 1 */
    int lock_fd; /* DIR/server.lock, held until exit; -1 when not taken */
    sigset_t sigs;
    fl_store *store;
    fl_pki pki;
    char *bootstrap_token;
    char *metrics_token; /* DIR/pki/metrics-reader.token: the metrics reader's */
    fl_api api;
    fl_auth *auth;
    fl_x509_authn *x509;   /* client certificates */
    fl_sa_tokens *sa;      /* ServiceAccount tokens */
    char *client_ca_pem;
    int ncrd, nagents;
    fl_audit *audit; /* NULL: no audit log */
    fl_http *http;
    char *url, *kubeconfig;
    fl_client *cp;
    fl_ctrl_manager *ctrl;
} server;

/* The reconciled revision outlives the process's gauges, which read it. */
static fl_reconciled reconciled;

/* What /readyz and /livez ask of the controllers (api/health.h), on the HTTP threads: the
 * manager from its start until its stop, under a lock, so that no probe reads one being freed. */
static struct {
    pthread_mutex_t mu;
    fl_ctrl_manager *m; /* under mu: NULL before the start and from the stop on */
    bool started;       /* under mu: the controllers' start has returned (stays true) */
    bool standby;       /* under mu: another replica leads the controllers (server_lead.h);
                           this one serves the API, and is ready without them */
} ctrl_health = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* informer-sync: every informer the controllers read has made its first list */
static int check_informer_sync(void *ctx, char *why, size_t cap)
{
    (void)ctx;
    pthread_mutex_lock(&ctrl_health.mu);
    bool running = ctrl_health.m != NULL, ok = ctrl_health.standby || fl_ctrl_manager_synced(ctrl_health.m);
    pthread_mutex_unlock(&ctrl_health.mu);
    if (!ok)
        snprintf(why, cap, "%s", running ? "informers have not made their first list yet" : "controllers not running");
    return !ok;
}

/* poststarthook/start-controllers: the controllers have started */
static int check_controllers_started(void *ctx, char *why, size_t cap)
{
    (void)ctx;
    pthread_mutex_lock(&ctrl_health.mu);
    bool ok = ctrl_health.started || ctrl_health.standby;
    pthread_mutex_unlock(&ctrl_health.mu);
    if (!ok)
        snprintf(why, cap, "not finished");
    return !ok;
}

static const fl_health_check server_checks[] = {
    {"informer-sync", FL_HEALTH_READYZ, check_informer_sync, NULL},
    {"poststarthook/start-controllers", FL_HEALTH_ALL, check_controllers_started, NULL},
    {NULL, 0, NULL, NULL},
};

/* A positive whole number for a flag, or one line naming the flag and exit status 2. */
static int positive_arg(const char *flag, const char *arg, const char *unit, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || v <= 0) {
        fprintf(stderr, "flotilla server: --%s: expected a positive number of %s, not \"%s\"\n", flag, unit, arg);
        return 2;
    }
    *out = v;
    return 0;
}

/* --max-object-bytes: 0, or 2 after saying what is wrong. */
static int object_bytes_arg(const char *arg, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > SIZE_MAX) {
        fprintf(stderr, "flotilla server: --max-object-bytes: expected a positive number of bytes, not \"%s\"\n", arg);
        return 2;
    }
    *out = (size_t)v;
    return 0;
}

/* The metrics way in of live status (controllers/metricsstatus.h): --status-prometheus-url (c
 * 'P'; 0: its default from the environment, arg may be NULL), --status-metrics-interval-ms ('Q'),
 * --status-metrics-timeout-ms ('R'). 0, or 2 after saying what is wrong. */
static int status_arg(int c, const char *arg, server_opts *o)
{
    if (c == 0) /* the defaults, from the environment (as `flotilla up` hands them on) */
        o->metrics_interval_ms = fl_env_ms("FLOTILLA_STATUS_METRICS_INTERVAL_MS", 0, 0);
    if (c == 'Q')
        return positive_arg("status-metrics-interval-ms", arg, "milliseconds", &o->metrics_interval_ms) ? 2 : 0;
    if (c == 'R')
        return positive_arg("status-metrics-timeout-ms", arg, "milliseconds", &o->metrics_timeout_ms) ? 2 : 0;
    if (arg && *arg && strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8)) {
        fprintf(stderr, "flotilla server: --status-prometheus-url: expected http://HOST:PORT or https://HOST:PORT, "
                        "not \"%s\"\n",
                arg);
        return 2;
    }
    o->prometheus_url = arg;
    return 0;
}

/* The --audit-* options (api/audit.h), long only: getopt values past any character. */
#define AUDIT_OPT 0x1000
#define AUDIT_LONGOPTS                                                                                             \
    {"audit-policy-file", required_argument, 0, AUDIT_OPT}, {"audit-log-path", required_argument, 0, AUDIT_OPT + 1}, \
        {"audit-log-maxsize", required_argument, 0, AUDIT_OPT + 2},                                                \
        {"audit-log-maxbackup", required_argument, 0, AUDIT_OPT + 3},                                              \
        {"audit-log-maxage", required_argument, 0, AUDIT_OPT + 4}

/* getopt's c (an --audit-* option, else an unknown one: usage) with its argument into *a.
 * The numbers are whole, from 0, as kube-apiserver's. Returns 0, or 2 after one line on
 * standard error. */
static int audit_arg(int c, const char *arg, fl_audit_config *a)
{
    static const char *const names[] = {"", "", "audit-log-maxsize", "audit-log-maxbackup", "audit-log-maxage"};
    static const char *const units[] = {"", "", "megabytes", "files", "days"};
    int which = c - AUDIT_OPT;
    if (which < 0 || which > 4) {
        usage(stderr);
        return 2;
    }
    if (which == 0 || which == 1) {
        *(which ? &a->log_path : &a->policy_file) = arg;
        return 0;
    }
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || v < 0 || v > 1000000) {
        fprintf(stderr, "flotilla server: --%s: expected a number of %s from 0, not \"%s\"\n", names[which],
                units[which], arg);
        return 2;
    }
    long *dst[] = {NULL, NULL, &a->max_size_mb, &a->max_backups, &a->max_age_days};
    *dst[which] = (long)v;
    return 0;
}

/* A Go duration of whole hours, minutes and seconds ("24h", "1h30m", "600s") in seconds; -1
 * when s is not one. */
static long long duration_seconds(const char *s)
{
    long long total = 0;
    if (!*s)
        return -1;
    while (*s) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        long long unit = *end == 'h' ? 3600 : *end == 'm' ? 60 : *end == 's' ? 1 : 0;
        if (errno || end == s || v < 0 || !unit || v > (1LL << 40))
            return -1;
        total += v * unit;
        s = end + 1;
    }
    return total;
}

/* `flotilla server`'s flags: the value is parse_args's case (the etcd flags, long only,
 * take OPT_ETCD + their index in server_opts' etcd fields). */
#define OPT_ETCD 1000
static const struct option longopts[] = {
    {"data-dir", required_argument, 0, 'd'},      {"listen", required_argument, 0, 'l'},
    {"insecure-http", no_argument, 0, 'k'},       {"max-requests-inflight", required_argument, 0, 'm'},
    {"compact-window", required_argument, 0, 'w'}, {"bookmark-interval-ms", required_argument, 0, 'b'},
    {"no-fsync", no_argument, 0, 'n'},            {"help", no_argument, 0, 'h'},
    {"tls-min-version", required_argument, 0, 'T'}, {"tls-cipher-suites", required_argument, 0, 'C'},
    {"max-object-bytes", required_argument, 0, 'O'},
    {"http-header-timeout", required_argument, 0, 'H'}, {"http-body-timeout", required_argument, 0, 'B'},
    {"http-idle-timeout", required_argument, 0, 'I'},
    {"eviction-rate", required_argument, 0, 'E'}, {"graceful-eviction-timeout", required_argument, 0, 'G'},
    {"failover-history-limit", required_argument, 0, 'Y'},
    {"shutdown-delay-duration", required_argument, 0, 'D'},
    {"token-auth-file", required_argument, 0, 'A'},
    {"client-ca-file", required_argument, 0, 'c'}, {"service-account-issuer", required_argument, 0, 'i'},
    {"api-audiences", required_argument, 0, 'a'},
    {"service-account-max-token-expiration", required_argument, 0, 'x'}, AUDIT_LONGOPTS,
    {"status-prometheus-url", required_argument, 0, 'P'}, {"status-metrics-interval-ms", required_argument, 0, 'Q'},
    {"status-metrics-timeout-ms", required_argument, 0, 'R'},
    {"v", required_argument, 0, 'v'},             {"logging-format", required_argument, 0, 'L'},
    {"etcd-servers", required_argument, 0, OPT_ETCD + 0}, {"etcd-cafile", required_argument, 0, OPT_ETCD + 1},
    {"etcd-certfile", required_argument, 0, OPT_ETCD + 2}, {"etcd-keyfile", required_argument, 0, OPT_ETCD + 3},
    {"etcd-prefix", required_argument, 0, OPT_ETCD + 4},
    {0, 0, 0, 0}};

/* The etcd flags go together as kube-apiserver's do: non-zero, after one line, when they do not. */
static int etcd_args(const server_opts *o)
{
    if (!o->etcd_servers && (o->etcd_cafile || o->etcd_certfile || o->etcd_keyfile || o->etcd_prefix)) {
        fprintf(stderr, "flotilla server: --etcd-cafile, --etcd-certfile, --etcd-keyfile and --etcd-prefix need "
                        "--etcd-servers\n");
        return 1;
    }
    const char *problem = fl_store_etcd_config_problem(&(fl_store_config){
        .etcd_prefix = o->etcd_prefix, .etcd_certfile = o->etcd_certfile, .etcd_keyfile = o->etcd_keyfile});
    if (problem) {
        fprintf(stderr, "flotilla server: %s\n", problem);
        return 1;
    }
    return 0;
}

/* Parse and check the command line into *o: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, server_opts *o)
{
    *o = (server_opts){.listen = "127.0.0.1:6443", .max_inflight = 400, .bookmark_ms = 60000, .window = 100000,
                       .header_timeout_s = FL_HTTP_HEADER_TIMEOUT_S, .body_timeout_s = FL_HTTP_BODY_TIMEOUT_S,
                       .idle_timeout_s = FL_HTTP_IDLE_TIMEOUT_S, .eviction_rate = FL_EVICTION_DEFAULT_RATE,
                       .eviction_timeout_s = FL_EVICTION_DEFAULT_GRACE_S,
                       .failover_history_limit = FL_EVICTION_DEFAULT_HISTORY};
    int c;
    const char *log_format = NULL, *log_v = NULL; /* core/log.h */
    optind = 1;
    if (status_arg(0, getenv("FLOTILLA_STATUS_PROMETHEUS_URL"), o))
        return 2;
    while ((c = getopt_long(argc, argv, "hv:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': o->data_dir = optarg; break;
        case 'v': log_v = optarg[0] == '=' ? optarg + 1 : optarg; break; /* -v=N, as klog */
        case 'L': log_format = optarg; break;
        case 'A': o->token_auth_file = optarg; break;
        case 'c': o->client_ca_file = optarg; break;
        case 'i': o->sa_issuer = optarg; break;
        case 'a': o->api_audiences = optarg; break;
        case 'x':
            if ((o->sa_max_seconds = duration_seconds(optarg)) < FL_SA_MIN_SECONDS) {
                fprintf(stderr, "flotilla server: --service-account-max-token-expiration: expected a duration of "
                                "at least 10m (e.g. 24h), not \"%s\"\n", optarg);
                return 2;
            }
            break;
        case 'P': case 'Q': case 'R':
            if (status_arg(c, optarg, o))
                return 2;
            break;
        case 'l': o->listen = optarg; break;
        case 'k': o->insecure = true; break;
        case 'm': o->max_inflight = atoi(optarg); break;
        case 'w': o->window = atoll(optarg); break;
        case 'b': o->bookmark_ms = atoi(optarg); break;
        case 'n': o->no_fsync = true; break;
        case 'T': o->tls_min_version = optarg; break;
        case 'C': o->tls_cipher_suites = optarg; break;
        case 'H':
        case 'B':
        case 'I': {
            static const char *const names[] = {"http-header-timeout", "http-body-timeout", "http-idle-timeout"};
            int *dst[] = {&o->header_timeout_s, &o->body_timeout_s, &o->idle_timeout_s};
            int i = c == 'H' ? 0 : c == 'B' ? 1 : 2;
            long long v;
            if (positive_arg(names[i], optarg, "seconds", &v))
                return 2;
            *dst[i] = v > INT_MAX ? INT_MAX : (int)v;
            break;
        }
        case 'O':
            if (object_bytes_arg(optarg, &o->max_object_bytes))
                return 2;
            break;
        case 'E': {
            char *end;
            errno = 0;
            o->eviction_rate = strtod(optarg, &end);
            if (errno || end == optarg || *end) {
                fprintf(stderr, "flotilla server: --eviction-rate: expected a number of evictions per second, not "
                                "\"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 'G':
            if (positive_arg("graceful-eviction-timeout", optarg, "seconds", &o->eviction_timeout_s))
                return 2;
            break;
        case 'Y': {
            char *end;
            errno = 0;
            o->failover_history_limit = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end || o->failover_history_limit < 0 || o->failover_history_limit > 1000) {
                fprintf(stderr, "flotilla server: --failover-history-limit: expected a number of entries from 0 to "
                                "1000, not \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 'D': {
            /* whole seconds, as kube-apiserver's duration may be written with an "s" */
            char *end;
            errno = 0;
            o->shutdown_delay_s = strtoll(optarg, &end, 10);
            if (*end == 's' && end != optarg)
                end++;
            if (errno || end == optarg || *end || o->shutdown_delay_s < 0 || o->shutdown_delay_s > 3600) {
                fprintf(stderr, "flotilla server: --shutdown-delay-duration: expected seconds from 0 to 3600, not "
                                "\"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 'h': usage(stdout); return 0;
        case OPT_ETCD + 0: o->etcd_servers = optarg; break;
        case OPT_ETCD + 1: o->etcd_cafile = optarg; break;
        case OPT_ETCD + 2: o->etcd_certfile = optarg; break;
        case OPT_ETCD + 3: o->etcd_keyfile = optarg; break;
        case OPT_ETCD + 4: o->etcd_prefix = optarg; break;
        default: if (audit_arg(c, optarg, &o->audit)) return 2; break;
        }
    }
    char why[256];
    if (fl_log_configure(log_format, log_v, why, sizeof why)) {
        fprintf(stderr, "flotilla server: %s\n", why);
        return 2;
    }
    if (!o->data_dir) {
        fprintf(stderr, "flotilla server: --data-dir is required\n");
        return 2;
    }

    if (etcd_args(o))
        return 2;
    if (o->insecure && !fl_cli_is_loopback(o->listen)) {
        fprintf(stderr, "flotilla server: --insecure-http is only allowed on a loopback address, not %s\n",
                o->listen);
        return 2;
    }
    if (o->max_inflight <= 0 || o->window <= 0 || o->bookmark_ms <= 0 || o->header_timeout_s <= 0 ||
        o->body_timeout_s <= 0 || o->idle_timeout_s <= 0) {
        fprintf(stderr, "flotilla server: numeric options must be positive\n");
        return 2;
    }
    if (o->insecure && (o->tls_min_version || o->tls_cipher_suites)) {
        fprintf(stderr, "flotilla server: --tls-min-version and --tls-cipher-suites have no effect with "
                        "--insecure-http\n");
        return 2;
    }
    /* a TLS flag that names nothing GnuTLS can use is refused now, not after the store opened */
    char *prio = NULL, *err = NULL;
    if (fl_http_tls_priorities(o->tls_min_version, o->tls_cipher_suites, &prio, &err)) {
        fprintf(stderr, "flotilla server: %s\n", err);
        free(err);
        return 2;
    }
    free(prio);
    if (mkdir(o->data_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "flotilla server: cannot create %s: %s\n", o->data_dir, strerror(errno));
        return 1;
    }
    return -1;
}

/* Make the data directory this process's: refuse to start on a secret others may read (the
 * store, its WAL, a key, a token or a kubeconfig: they were exposed, and going on would hide
 * it), take the directory's lock so that a second server on it exits at once instead of
 * serving stale lists and taking over the kubeconfig, and make the directory itself 0700
 * (one made by hand with the usual umask is 0755; tightening it is safe and said in the log).
 * The first two read only: a refused start writes nothing. One line and an error on failure. */
static int claim_data_dir(server *sv)
{
    const char *dir = sv->o.data_dir;
    static const char *const own[] = {STORE_FILE, STORE_FILE "-wal", STORE_FILE "-shm", "kubeconfig",
                                      "bootstrap-kubeconfig"};
    enum { NOWN = sizeof own / sizeof *own };
    char *paths[NOWN + 1] = {0}; /* NULL-terminated */
    for (size_t i = 0; i < NOWN; i++)
        paths[i] = fl_asprintf("%s/%s", dir, own[i]);
    char *why = NULL;
    int rc = fl_file_check_private((const char *const *)paths, &why);
    for (size_t i = 0; i < NOWN; i++)
        free(paths[i]);
    if (!rc)
        rc = fl_pki_check_private(dir, &why);
    if (rc) {
        fprintf(stderr, "flotilla server: %s\n", why);
        free(why);
        return rc;
    }

    char *lock = fl_asprintf("%s/%s", dir, LOCK_FILE);
    long holder = 0;
    rc = fl_file_lock(lock, &sv->lock_fd, &holder);
    if (rc == FL_EEXIST)
        fprintf(stderr, "flotilla server: %s is in use by another flotilla server (pid %ld); stop it first or use "
                        "another --data-dir\n", dir, holder);
    else if (rc)
        fprintf(stderr, "flotilla server: cannot lock %s: %s\n", lock, strerror(errno));
    free(lock);
    if (rc)
        return rc;

    mode_t was = 0;
    if (fl_file_private_dir(dir, &was) != 0) {
        fprintf(stderr, "flotilla server: %s is open to others (mode %04o) and cannot be made private: %s; "
                        "run: chmod 700 %s\n", dir, (unsigned)was, strerror(errno), dir);
        return FL_EIO;
    }
    if (was & 077)
        fl_log(FL_LOG_WARN, "server", "the data directory %s was mode %04o; made it 0700, as it holds the store, "
                                      "keys and tokens", dir, (unsigned)was);
    return 0;
}

/* Read whether the controllers resume at a reconciled revision, from the store's notes as
 * they are now: at the start, or when this replica comes to lead. */
static void init_reconciled(server *sv)
{
    fl_reconciled_store rs = {.ctx = sv->store,
                              .head = store_head,
                              .unchanged_since = store_unchanged_since,
                              .note_get = store_note_get,
                              .note_set = store_note_set,
                              .note_get_text = store_note_get_text,
                              .note_set_text = store_note_set_text};
    fl_reconciled_init(&reconciled, &rs);
}

/* Open the store in the data directory, and read whether this start resumes at a reconciled
 * revision before anything writes to it (the system namespaces, if they are missing). */
static int open_store(server *sv)
{
    char *db = fl_asprintf("%s/" STORE_FILE, sv->o.data_dir);
    fl_store_config scfg = {.path = db,
                            .compact_window = sv->o.window,
                            .durable = !sv->o.no_fsync,
                            .load_mark = FL_API_LOAD_MARK,
                            .etcd_servers = sv->o.etcd_servers,
                            .etcd_cafile = sv->o.etcd_cafile,
                            .etcd_certfile = sv->o.etcd_certfile,
                            .etcd_keyfile = sv->o.etcd_keyfile,
                            .etcd_prefix = sv->o.etcd_prefix};
    int rc = fl_store_open(&scfg, &sv->store);
    /* etcd not answering yet (starting with it, or down): wait for it, saying so now and then;
     * the server serves once the store opens. A wrong URL or certificate does not wait. */
    for (int64_t said = fl_time_mono_ms(); rc == FL_ETIMEDOUT && sv->o.etcd_servers;) {
        if (fl_time_mono_ms() - said >= 5000) {
            fl_log(FL_LOG_WARN, "server", "etcd at %s does not answer yet; the server serves once it does",
                   sv->o.etcd_servers);
            said = fl_time_mono_ms();
        }
        const struct timespec pause = {1, 0};
        int sig = sigtimedwait(&sv->sigs, NULL, &pause);
        if (sig == SIGINT || sig == SIGTERM) {
            free(db);
            return FL_ECLOSED;
        }
        rc = fl_store_open(&scfg, &sv->store);
    }
    free(db);
    if (rc) {
        if (sv->o.etcd_servers)
            fprintf(stderr, "flotilla server: cannot open the store on etcd %s: %s\n", sv->o.etcd_servers,
                    fl_strerror(rc));
        else
            fprintf(stderr, "flotilla server: cannot open the store in %s: %s\n", sv->o.data_dir, fl_strerror(rc));
        return rc;
    }
    init_reconciled(sv);
    return 0;
}

/* The certificates and the bootstrap token, what `flotilla agent` registers a pull cluster
 * with (none with --insecure-http). */
static int ensure_credentials(server *sv)
{
    if (sv->o.insecure)
        return 0;
    char *err = NULL;
    if (fl_pki_ensure(sv->o.data_dir, NULL, &sv->pki, &err) != 0) {
        fprintf(stderr, "flotilla server: %s\n", err ? err : "cannot create certificates");
        free(err);
        return FL_EIO;
    }
    char *bt = fl_asprintf("%s/pki/bootstrap.token", sv->o.data_dir);
    int rc = fl_token_ensure(bt, &sv->bootstrap_token, &err);
    free(bt);
    if (!rc) {
        char *mt = fl_asprintf("%s/pki/metrics-reader.token", sv->o.data_dir);
        rc = fl_token_ensure(mt, &sv->metrics_token, &err);
        free(mt);
    }
    if (rc) {
        fprintf(stderr, "flotilla server: %s\n", err ? err : "cannot create a token");
        free(err);
    }
    return rc;
}

/* Client certificates (the CA given, else ours; ours signs them for `flotilla ctl kubeconfig`)
 * and ServiceAccount tokens (signed with DIR/pki/sa.key). 0, or 1 after one line on stderr. */
static int setup_authenticators(server *sv)
{
    char *err = NULL;
    int rc = 0;
    if (sv->o.client_ca_file) {
        size_t n;
        if (fl_read_file(sv->o.client_ca_file, 1 << 20, &sv->client_ca_pem, &n)) {
            fprintf(stderr, "flotilla server: --client-ca-file %s: cannot read it\n", sv->o.client_ca_file);
            return 1;
        }
    } else {
        sv->client_ca_pem = fl_strdup(sv->pki.ca_cert_pem);
    }
    if ((rc = fl_x509_authn_new(sv->client_ca_pem, &sv->x509, &err))) {
        fprintf(stderr, "flotilla server: --client-ca-file %s: %s\n",
                sv->o.client_ca_file ? sv->o.client_ca_file : "(the server's CA)", err);
        goto out;
    }
    fl_x509_authn_set_signer(sv->x509, sv->pki.ca_cert_pem, sv->pki.ca_key_pem);
    fl_sa_config sc = {.key_pem = sv->pki.sa_key_pem, .issuer = sv->o.sa_issuer, .audiences = sv->o.api_audiences,
                       .max_seconds = sv->o.sa_max_seconds};
    if ((rc = fl_sa_tokens_new(&sv->api, &sc, &sv->sa, &err))) {
        fprintf(stderr, "flotilla server: %s\n", err);
        goto out;
    }
    fl_auth_set_authenticators(sv->auth, sv->x509, sv->sa);
out:
    free(err);
    return rc ? 1 : 0;
}

/* The API over the store: authentication, the agents' tokens, the stored CRDs served again,
 * the system namespaces, and the metrics of the store and of the reconciled revision. */
static int setup_api(server *sv)
{
    sv->api = (fl_api){.store = sv->store, .bookmark_interval_ms = sv->o.bookmark_ms,
                       .health_checks = server_checks,
                       .max_object_bytes = sv->o.max_object_bytes,
                       .ui = true};
    fl_auth_new(&sv->api, sv->pki.admin_token, sv->bootstrap_token, &sv->auth);
    fl_auth_set_metrics_reader(sv->auth, sv->metrics_token);
    sv->api.auth = sv->auth;
    if (sv->o.token_auth_file && sv->o.insecure) {
        fprintf(stderr, "flotilla server: --token-auth-file needs authentication, which --insecure-http turns off\n");
        return 1;
    }
    if (sv->o.token_auth_file) {
        char *err = NULL;
        int n = fl_auth_load_token_file(sv->auth, sv->o.token_auth_file, &err);
        if (n < 0) {
            fprintf(stderr, "flotilla server: %s\n", err);
            free(err);
            return 1;
        }
        fl_log(FL_LOG_INFO, "server", "loaded %d tokens from %s", n, sv->o.token_auth_file);
    }
    if (!sv->o.insecure && setup_authenticators(sv))
        return 1;
    sv->ncrd = fl_api_load_crds(&sv->api);
    sv->nagents = fl_auth_load(sv->auth);
    static const char *system_namespaces[] = {"default", "kube-system", "kube-public", "kube-node-lease", NULL};
    for (int i = 0; system_namespaces[i]; i++)
        if (fl_api_ensure_namespace(&sv->api, system_namespaces[i]))
            fl_log_kv(FL_LOG_WARN, "server", "creating a system namespace failed", "object",
                      FL_LOG_OBJ("Namespace", NULL, system_namespaces[i]), NULL);
    fl_store *store = sv->store;
    fl_metrics_gauge("flotilla_store_keys", "Live keys in the store.", gauge_keys, store);
    fl_metrics_gauge("flotilla_store_revision", "Head revision of the store.", gauge_rev, store);
    fl_metrics_gauge("flotilla_store_compact_revision", "Compacted revision of the store.", gauge_compact, store);
    fl_metrics_gauge("flotilla_watches", "Open watches (API watch streams).", gauge_watches, store);
    fl_metrics_gauge("flotilla_controllers_resumed",
                     "1 when this process started at the revision its controllers had last finished at, "
                     "and skipped their first passes.",
                     gauge_resumed, &reconciled);
    fl_metrics_gauge("flotilla_reconciled_revision",
                     "The last store revision this process noted as one every controller had finished at "
                     "(0: none yet).",
                     gauge_noted, &reconciled);
    fl_metrics_gauge("flotilla_member_watches_noted",
                     "1 when the member watches, and where each had reached, are noted with that revision: a "
                     "start there resumes them instead of listing the members.",
                     gauge_watches_noted, &reconciled);
    fl_procmetrics_register();
    return 0;
}

/* Serve the API, then write the kubeconfigs, which name the address clients should dial:
 * DIR/kubeconfig (admin) and DIR/bootstrap-kubeconfig (agents). */
static int start_http(server *sv)
{
    bool insecure = sv->o.insecure;
    fl_http_config hcfg = {.listen = sv->o.listen,
                           .cert_pem = insecure ? NULL : sv->pki.server_cert_pem,
                           .key_pem = insecure ? NULL : sv->pki.server_key_pem,
                           .token = insecure ? NULL : sv->pki.admin_token,
                           .auth = insecure ? NULL : sv->auth,
                           .client_ca_pem = insecure ? NULL : sv->client_ca_pem,
                           .tls_min_version = sv->o.tls_min_version,
                           .tls_cipher_suites = sv->o.tls_cipher_suites,
                           .max_inflight = sv->o.max_inflight,
                           /* on etcd each write waits a round trip to the cluster: more
                            * workers keep 32 writers from queueing (docs/BENCHMARKS.md, "HA on
                            * etcd"); they start on demand, so an idle server has no more */
                           .max_workers = fl_store_shared(sv->store) ? 64 : 0,
                           .header_timeout_s = sv->o.header_timeout_s,
                           .body_timeout_s = sv->o.body_timeout_s,
                           .idle_timeout_s = sv->o.idle_timeout_s,
                           .audit = sv->audit};
    char *err = NULL;
    int rc = fl_http_start(&hcfg, &sv->api, &sv->http, &err);
    if (rc) {
        fprintf(stderr, "flotilla server: %s\n", err);
        free(err);
        return rc;
    }
    char host[160];
    snprintf(host, sizeof host, "%s", sv->o.listen);
    char *colon = strrchr(host, ':');
    *colon = 0;
    if (!host[0] || !strcmp(host, "0.0.0.0"))
        snprintf(host, sizeof host, "127.0.0.1");
    sv->url = fl_asprintf("%s://%s:%d", insecure ? "http" : "https", host, fl_http_port(sv->http));
    sv->kubeconfig = fl_asprintf("%s/kubeconfig", sv->o.data_dir);
    const char *ca = insecure ? NULL : sv->pki.ca_cert_pem;
    if (fl_kubeconfig_write(sv->kubeconfig, sv->url, ca, insecure ? NULL : sv->pki.admin_token) != 0)
        fprintf(stderr, "flotilla server: cannot write %s\n", sv->kubeconfig);
    char *bkc = fl_asprintf("%s/bootstrap-kubeconfig", sv->o.data_dir);
    if (fl_kubeconfig_write_user(bkc, sv->url, ca, FL_AUTH_BOOTSTRAP, sv->bootstrap_token))
        fprintf(stderr, "flotilla server: cannot write %s\n", bkc);
    free(bkc);
    fl_log(FL_LOG_INFO, "server", "serving on %s (store rev %lld, %d CRDs, %d agent tokens); kubeconfig: %s",
           sv->url, (long long)fl_store_rev(sv->store), sv->ncrd, sv->nagents, sv->kubeconfig);
    return 0;
}

/* Controllers are clients of this API like any other, with the same requests, answers and
 * watches, but in process (fl_api_local_client): no TLS, TCP or HTTP in between. They resume
 * at the reconciled revision when this start may. */
static void start_controllers(server *sv)
{
    sv->cp = fl_api_local_client(&sv->api, "flotilla-controller-manager");
    json_t *notes = fl_reconciled_resumed_notes(&reconciled);
    int64_t resumed_rev = fl_reconciled_resumed_rev(&reconciled);
    fl_ctrl_env env = {.cp = sv->cp,
                       .data_dir = sv->o.data_dir,
                       .stopping = &sv->api.stopping,
                       .resumed_rev = resumed_rev,
                       .resumed_notes = notes};
    if (resumed_rev)
        fl_log(FL_LOG_INFO, "server", "the controllers had finished at revision %lld: they resume there%s",
               (long long)resumed_rev,
               fl_reconciled_watches_noted(&reconciled) ? ", and the member watches where they had reached" : "");
    fl_eviction_configure(sv->o.eviction_rate, sv->o.eviction_timeout_s);
    fl_eviction_set_history_limit((int)sv->o.failover_history_limit);
    fl_mstatus_configure(sv->o.prometheus_url, sv->o.metrics_interval_ms, sv->o.metrics_timeout_ms);
    fl_ctrl_manager_start(&env, fl_server_controllers, &sv->ctrl);
    pthread_mutex_lock(&ctrl_health.mu);
    ctrl_health.m = sv->ctrl;
    ctrl_health.started = true;
    pthread_mutex_unlock(&ctrl_health.mu);
    json_decref(notes); /* the controllers took what they keep */
}

/* Until a signal: note the reconciled revision when it is due, and once a spell of writes
 * has ended, the objects last written are no longer kept decoded, the informers' hot
 * decodings and the store's values in memory go, and the heap gives back the pages it freed
 * (fl_mem_quiet_due). 5,000 Deployments over 10 clusters held 325 MiB when the store went
 * quiet, 273 MiB with the trim, 263 MiB with the decodings let go too, about 240 MiB with
 * the rest and the long-lived records in slabs of their own (core/keep.h), 222 MiB with the
 * decoder's shared leaves let go, and 127-135 MiB once the idle threads (this one too) had
 * given back their node caches (core/mem.h) and the heap was trimmed again. Returns the
 * signal. */
/* A replica's part in the lead (server_lead.h), every tick of the main loop: start the
 * controllers once this replica leads, stop them when it loses the lead and campaign again;
 * true when it must stop (no campaign could start). */
static bool follow_lead(server *sv)
{
    int st = fl_lead_state(sv->lead);
    if (st == FL_LEAD_LEADING && !sv->ctrl) {
        fl_store_fence_thread(true); /* this thread notes the reconciled revision: only while leading */
        init_reconciled(sv);         /* what the last leader noted */
        start_controllers(sv);
        pthread_mutex_lock(&ctrl_health.mu);
        ctrl_health.standby = false;
        pthread_mutex_unlock(&ctrl_health.mu);
        fl_lead_mirror(sv->lead, sv->cp);
    }
    if (st != FL_LEAD_LOST)
        return false;
    /* the controllers stop (their writes are refused from now on anyway); the API goes on,
     * and the replica campaigns again as a standby */
    fl_log(FL_LOG_ERROR, "lead", "%s lost the lead of the controllers: they stop; this replica serves the API and "
                                 "campaigns again", fl_lead_identity(sv->lead));
    pthread_mutex_lock(&ctrl_health.mu);
    ctrl_health.m = NULL;
    ctrl_health.standby = true;
    pthread_mutex_unlock(&ctrl_health.mu);
    fl_ctrl_manager_stop(sv->ctrl);
    sv->ctrl = NULL;
    fl_client_free(sv->cp);
    sv->cp = NULL;
    fl_lead_stop(sv->lead);
    sv->lead = fl_lead_start(sv->store, sv->o.data_dir, FL_LEAD_TTL_S, &sv->api.stopping);
    sv->lost_lead = sv->lead == NULL;
    return sv->lost_lead; /* no thread for a campaign: stop */
}

static int run_until_signal(server *sv)
{
    int sig = -1;
    fl_mem_quiet quiet = {0};
    int64_t trim_again = 0; /* once the threads idle since have given their caches back */
    const struct timespec tick = {0, 250 * 1000000L};

    while ((sig = sigtimedwait(&sv->sigs, NULL, &tick)) < 0) {
        if (sv->lead && follow_lead(sv))
            return SIGTERM;
        if (sv->ctrl)
            fl_reconciled_tick(&reconciled, sv->ctrl, fl_time_mono_ms());
        if (fl_mem_quiet_due(&quiet, (long long)fl_store_rev(sv->store), (long long)fl_time_mono_ms(), QUIET_MS,
                             QUIET_WRITES)) {
            int64_t t0 = fl_time_mono_ms();
            fl_api_decoded_forget();
            fl_informer_rest_all();
            fl_json_rest();
            fl_store_rest(sv->store);
            fl_node_cache_drain(); /* what those let go of came to this thread's cache */
            fl_mem_trim();
            fl_log(FL_LOG_INFO, "server", "the store is quiet at revision %lld: heap trimmed in %lld ms",
                   (long long)fl_store_rev(sv->store), (long long)(fl_time_mono_ms() - t0));
            trim_again = fl_time_mono_ms() + 2 * FL_NODE_IDLE_MS;
        } else if (trim_again && fl_time_mono_ms() >= trim_again) {
            trim_again = 0;
            fl_mem_trim();
        }
    }
    return sig;
}

/* --shutdown-delay-duration: /readyz fails (its shutdown check) while everything else is
 * served as before, for the delay or until a second signal, so that whoever routes by
 * readiness stops sending new requests before the server stops taking them. */
static void shutdown_delay(server *sv)
{
    if (sv->o.shutdown_delay_s <= 0)
        return;
    sv->api.shutting_down = 1;
    fl_log(FL_LOG_INFO, "server", "/readyz fails from now; serving %lld s more before stopping",
           sv->o.shutdown_delay_s);
    const struct timespec delay = {(time_t)sv->o.shutdown_delay_s, 0};
    if (sigtimedwait(&sv->sigs, NULL, &delay) >= 0)
        fl_log(FL_LOG_INFO, "server", "a second signal: stopping now");
}

/* Undo what the steps set up, in reverse: stop the controllers and stop serving before the
 * store closes. Every acknowledged write is already durable. */
static void server_close(server *sv)
{
    sv->api.stopping = 1;
    pthread_mutex_lock(&ctrl_health.mu);
    ctrl_health.m = NULL; /* no probe looks at the manager from here on */
    pthread_mutex_unlock(&ctrl_health.mu);
    fl_ctrl_manager_stop(sv->ctrl);
    fl_lead_stop(sv->lead); /* after the controllers' last write, before the store closes */
    fl_client_free(sv->cp);
    fl_http_stop(sv->http);
    fl_audit_free(sv->audit); /* no request is left to write to it */
    fl_auth_free(sv->auth);
    fl_x509_authn_free(sv->x509);
    fl_sa_tokens_free(sv->sa);
    free(sv->client_ca_pem);
    free_token(sv->bootstrap_token);
    free_token(sv->metrics_token);
    fl_store_free(sv->store);
    fl_pki_close(&sv->pki);
    free(sv->kubeconfig);
    free(sv->url);
    if (sv->lock_fd >= 0)
        close(sv->lock_fd); /* last: the directory is another server's to take from here on */
    sv->lock_fd = -1;
}

int fl_cmd_server(int argc, char **argv)
{
    server sv = {.lock_fd = -1};
    /* Before anything is created: the store and whatever else lands in the data directory
     * hold credentials, and are this user's alone. */
    umask(077);
    int rc = parse_args(argc, argv, &sv.o);
    if (rc >= 0)
        return rc;
    /* a policy that does not parse stops the server before it touches the data directory */
    char *aerr = NULL;
    if (fl_audit_new(&sv.o.audit, &sv.audit, &aerr)) {
        fprintf(stderr, "flotilla server: %s\n", aerr);
        free(aerr);
        return 1;
    }
    if (claim_data_dir(&sv))
        return 1;
    /* block the signals before any thread starts, so only sigwait sees them */
    fl_cli_block_signals(&sv.sigs);
    fl_kinds_init();
    if (open_store(&sv))
        return 1;
    if (ensure_credentials(&sv)) {
        server_close(&sv);
        return 1;
    }
    if (setup_api(&sv) || start_http(&sv)) {
        server_close(&sv);
        return 1;
    }
    if (fl_store_shared(sv.store)) {
        /* replicas share the store: the controllers run where the lead is (server_lead.h) */
        pthread_mutex_lock(&ctrl_health.mu);
        ctrl_health.standby = true;
        pthread_mutex_unlock(&ctrl_health.mu);
        if (!(sv.lead = fl_lead_start(sv.store, sv.o.data_dir, FL_LEAD_TTL_S, &sv.api.stopping))) {
            server_close(&sv);
            return 1;
        }
    } else {
        start_controllers(&sv);
    }
    printf("flotilla server listening on %s\nkubeconfig: %s\n", sv.url, sv.kubeconfig);
    fflush(stdout);

    int sig = run_until_signal(&sv);
    fl_log(FL_LOG_INFO, "server", "received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    shutdown_delay(&sv);
    bool lost = sv.lost_lead;
    server_close(&sv);
    fl_log(FL_LOG_INFO, "server", "stopped");
    return lost ? 1 : 0;
}
