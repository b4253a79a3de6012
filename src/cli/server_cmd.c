/* server_cmd.c - `flotilla server`: the control plane process.
 *
 * Opens the store in the data directory, makes sure the PKI, the bootstrap token and the
 * kubeconfigs (DIR/kubeconfig: admin; DIR/bootstrap-kubeconfig: agents) exist, loads the
 * agent tokens (auth.h), re-serves stored CRDs, creates the default namespaces, and serves
 * the API until SIGTERM/SIGINT, then shuts down gracefully: stop accepting, let requests
 * finish, end watches, close the store (every acknowledged write is already durable). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/http.h"
#include "api/kinds.h"
#include "core/metrics.h"
#include "api/tls.h"
#include "cli/cli.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/kubeconfig.h"
#include "controllers/controller.h"
#include "core/build.h"
#include "core/env.h"
#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

/* The heap is trimmed once the store has stood still for QUIET_MS after QUIET_WRITES or
 * more writes (a burst, not the periodic heartbeats). */
#define QUIET_MS 3000
#define QUIET_WRITES 1000

/* ---- the reconciled revision ----
 *
 * Once the store's head has not moved for RECONCILED_QUIET_MS and every controller that
 * resumes is idle (fl_ctrl_manager_idle), the head is noted in the store as the revision
 * every controller had finished at, with the build that noted it. A start whose head is still
 * that revision, by the same build, resumes there: the controllers skip their first passes
 * (docs/internals/propagation.md, "Resuming at a reconciled revision"). Any write after the
 * note, a kill before it, or another build means the next start reconciles everything. */
#define RECONCILED_QUIET_MS 1000 /* FLOTILLA_RECONCILED_QUIET_MS */
#define NOTE_REV "reconciled_rev"
#define NOTE_BUILD "reconciled_build"
/* With them, what the controllers note (fl_ctrl_note), each under its name as
 * {"rev": <the reconciled revision>, "noted": ...}: where the member watches had reached,
 * once the execution controller is idle; which bindings propagate dependencies. */

/* The head, if it is the reconciled revision this build noted; else 0. */
static int64_t resumes_at(fl_store *s)
{
    int64_t rev = 0, build = 0, head = fl_store_rev(s);
    if (!fl_build_id() || fl_store_note_get(s, NOTE_REV, &rev) || fl_store_note_get(s, NOTE_BUILD, &build))
        return 0;
    return rev == head && build == fl_build_id() ? head : 0;
}

/* What the controllers noted with revision rev ({name: noted}, a new reference): a note
 * made with another revision is left out. */
static json_t *resumed_notes(fl_store *s, int64_t rev)
{
    json_t *out = json_object();
    for (const char *const *name = fl_ctrl_note_names; rev && *name; name++) {
        char *text = NULL;
        if (fl_store_note_get_text(s, *name, &text))
            continue;
        json_t *note = fl_json_load(text, strlen(text));
        free(text);
        json_t *at = json_object_get(note, "rev"), *noted = json_object_get(note, "noted");
        if (json_is_integer(at) && json_integer_value(at) == rev && noted)
            json_object_set(out, *name, noted);
        json_decref(note);
    }
    return out;
}

typedef struct reconciled {
    int64_t seen, seen_at, noted, quiet_ms;
    unsigned notes; /* bit i: fl_ctrl_note_names[i] is noted with noted */
} reconciled;

static unsigned all_notes(void)
{
    unsigned n = 0;
    while (fl_ctrl_note_names[n])
        n++;
    return (1u << n) - 1;
}

/* The bit of the member watches' note. */
static unsigned watches_bit(void)
{
    for (unsigned i = 0; fl_ctrl_note_names[i]; i++)
        if (!strcmp(fl_ctrl_note_names[i], FL_CTRL_NOTE_WATCHES))
            return 1u << i;
    return 0;
}

/* Write the controllers' notes not yet written for the reconciled revision head, those
 * their controllers can give now (the execution controller's once it is idle). */
static void write_notes(reconciled *r, fl_store *s, fl_ctrl_manager *m, int64_t head)
{
    unsigned have = __atomic_load_n(&r->notes, __ATOMIC_RELAXED);
    for (unsigned i = 0; fl_ctrl_note_names[i]; i++) {
        if (have & (1u << i))
            continue;
        json_t *noted = fl_ctrl_manager_note(m, fl_ctrl_note_names[i], head);
        if (!noted)
            continue;
        json_t *note = json_pack("{s:I, s:o}", "rev", (json_int_t)head, "noted", noted);
        char *text = fl_json_dumps(note, NULL);
        json_decref(note);
        if (fl_store_note_set_text(s, fl_ctrl_note_names[i], text) == 0)
            have |= 1u << i;
        free(text);
    }
    __atomic_store_n(&r->notes, have, __ATOMIC_RELAXED);
}

static void reconciled_tick(reconciled *r, fl_store *s, fl_ctrl_manager *m, int64_t now_ms)
{
    int64_t head = fl_store_rev(s);
    if (head != r->seen) {
        r->seen = head;
        r->seen_at = now_ms;
        return;
    }
    if ((head == r->noted && r->notes == all_notes()) || now_ms - r->seen_at < r->quiet_ms || !fl_build_id() ||
        !fl_ctrl_manager_idle(m))
        return;
    if (head == r->noted) {
        /* a controller could not say yet when the revision was noted (the execution
         * controller still busy with its members), or the start resumed without its note:
         * it follows once it can */
        write_notes(r, s, m, head);
        return;
    }
    /* the build first: a note of the revision alone never pairs with another build's; the
     * controllers' notes before the revision too, naming the revision they go with */
    if (fl_store_note_set(s, NOTE_BUILD, fl_build_id()))
        return;
    __atomic_store_n(&r->notes, 0, __ATOMIC_RELAXED);
    write_notes(r, s, m, head);
    if (fl_store_note_set(s, NOTE_REV, head) == 0) {
        __atomic_store_n(&r->noted, head, __ATOMIC_RELAXED);
        fl_log(FL_LOG_DEBUG, "server", "the controllers are idle at revision %lld: noted as reconciled%s",
               (long long)head, r->notes & watches_bit() ? ", with the member watches" : "");
    }
}

static double gauge_noted(void *ctx)
{
    return (double)__atomic_load_n(&((reconciled *)ctx)->noted, __ATOMIC_RELAXED);
}

static double gauge_watches_noted(void *ctx)
{
    return __atomic_load_n(&((reconciled *)ctx)->notes, __ATOMIC_RELAXED) & watches_bit() ? 1 : 0;
}

static double gauge_resumed(void *ctx)
{
    return *(const int64_t *)ctx ? 1 : 0;
}

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
               "\n"
               "Writes DIR/kubeconfig for kubectl: kubectl --kubeconfig DIR/kubeconfig get ns\n"
               "and DIR/bootstrap-kubeconfig for pull-mode agents (flotilla agent --server-kubeconfig ...).\n");
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

int fl_cmd_server(int argc, char **argv)
{
    const char *data_dir = NULL, *listen = "127.0.0.1:6443";
    bool insecure = false, no_fsync = false;
    int max_inflight = 400, bookmark_ms = 60000;
    long long window = 100000;
    static const struct option longopts[] = {
        {"data-dir", required_argument, 0, 'd'},      {"listen", required_argument, 0, 'l'},
        {"insecure-http", no_argument, 0, 'k'},       {"max-requests-inflight", required_argument, 0, 'm'},
        {"compact-window", required_argument, 0, 'w'}, {"bookmark-interval-ms", required_argument, 0, 'b'},
        {"no-fsync", no_argument, 0, 'n'},            {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': data_dir = optarg; break;
        case 'l': listen = optarg; break;
        case 'k': insecure = true; break;
        case 'm': max_inflight = atoi(optarg); break;
        case 'w': window = atoll(optarg); break;
        case 'b': bookmark_ms = atoi(optarg); break;
        case 'n': no_fsync = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!data_dir) {
        fprintf(stderr, "flotilla server: --data-dir is required\n");
        return 2;
    }
    if (insecure && !fl_cli_is_loopback(listen)) {
        fprintf(stderr, "flotilla server: --insecure-http is only allowed on a loopback address, not %s\n", listen);
        return 2;
    }
    if (max_inflight <= 0 || window <= 0 || bookmark_ms <= 0) {
        fprintf(stderr, "flotilla server: numeric options must be positive\n");
        return 2;
    }
    if (mkdir(data_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "flotilla server: cannot create %s: %s\n", data_dir, strerror(errno));
        return 1;
    }

    /* block the signals before any thread starts, so only sigwait sees them */
    sigset_t sigs;
    fl_cli_block_signals(&sigs);

    fl_kinds_init();
    char *db = fl_asprintf("%s/store.db", data_dir);
    fl_store_config scfg = {.path = db, .compact_window = window, .durable = !no_fsync, .load_mark = FL_API_LOAD_MARK};
    fl_store *store = NULL;
    int rc = fl_store_open(&scfg, &store);
    free(db);
    if (rc) {
        fprintf(stderr, "flotilla server: cannot open the store in %s: %s\n", data_dir, fl_strerror(rc));
        return 1;
    }
    /* before anything writes: the system namespaces below, if they are missing */
    static int64_t resumed_rev;
    resumed_rev = resumes_at(store);
    static reconciled rec;
    rec = (reconciled){.seen = -1,
                       .noted = resumed_rev ? resumed_rev : 0,
                       .quiet_ms = fl_env_ms("FLOTILLA_RECONCILED_QUIET_MS", RECONCILED_QUIET_MS, 0)};
    fl_pki pki;
    memset(&pki, 0, sizeof pki);
    char *err = NULL;
    if (!insecure && fl_pki_ensure(data_dir, NULL, &pki, &err) != 0) {
        fprintf(stderr, "flotilla server: %s\n", err ? err : "cannot create certificates");
        fl_store_free(store);
        return 1;
    }
    /* the bootstrap token: what `flotilla agent` registers a pull cluster with */
    char *bootstrap_token = NULL;
    if (!insecure) {
        char *bt = fl_asprintf("%s/pki/bootstrap.token", data_dir);
        rc = fl_token_ensure(bt, &bootstrap_token, &err);
        free(bt);
        if (rc) {
            fprintf(stderr, "flotilla server: %s\n", err ? err : "cannot create the bootstrap token");
            free(err);
            fl_pki_close(&pki);
            fl_store_free(store);
            return 1;
        }
    }
    fl_api api = {.store = store, .bookmark_interval_ms = bookmark_ms};
    fl_auth *auth = NULL;
    fl_auth_new(&api, pki.admin_token, bootstrap_token, &auth);
    api.auth = auth;
    int ncrd = fl_api_load_crds(&api);
    int nagents = fl_auth_load(auth);
    static const char *system_namespaces[] = {"default", "kube-system", "kube-public", "kube-node-lease", NULL};
    for (int i = 0; system_namespaces[i]; i++)
        if (fl_api_ensure_namespace(&api, system_namespaces[i]))
            fl_log(FL_LOG_WARN, "server", "could not create namespace %s", system_namespaces[i]);
    fl_metrics_gauge("flotilla_store_keys", "Live keys in the store.", gauge_keys, store);
    fl_metrics_gauge("flotilla_store_revision", "Head revision of the store.", gauge_rev, store);
    fl_metrics_gauge("flotilla_store_compact_revision", "Compacted revision of the store.", gauge_compact, store);
    fl_metrics_gauge("flotilla_watch_count", "Open watches.", gauge_watches, store);
    fl_metrics_gauge("flotilla_controllers_resumed",
                     "1 when this process started at the revision its controllers had last finished at, "
                     "and skipped their first passes.",
                     gauge_resumed, &resumed_rev);
    fl_metrics_gauge("flotilla_reconciled_revision",
                     "The last store revision this process noted as one every controller had finished at "
                     "(0: none yet).",
                     gauge_noted, &rec);
    fl_metrics_gauge("flotilla_member_watches_noted",
                     "1 when the member watches, and where each had reached, are noted with that revision: a "
                     "start there resumes them instead of listing the members.",
                     gauge_watches_noted, &rec);

    fl_http_config hcfg = {.listen = listen,
                           .cert_pem = insecure ? NULL : pki.server_cert_pem,
                           .key_pem = insecure ? NULL : pki.server_key_pem,
                           .token = insecure ? NULL : pki.admin_token,
                           .auth = insecure ? NULL : auth,
                           .max_inflight = max_inflight};
    fl_http *http = NULL;
    rc = fl_http_start(&hcfg, &api, &http, &err);
    if (rc) {
        fprintf(stderr, "flotilla server: %s\n", err);
        free(err);
        fl_auth_free(auth);
        free_token(bootstrap_token);
        fl_pki_close(&pki);
        fl_store_free(store);
        return 1;
    }
    /* the kubeconfig names the address clients should dial */
    char host[160];
    snprintf(host, sizeof host, "%s", listen);
    char *colon = strrchr(host, ':');
    *colon = 0;
    if (!host[0] || !strcmp(host, "0.0.0.0"))
        snprintf(host, sizeof host, "127.0.0.1");
    char *url = fl_asprintf("%s://%s:%d", insecure ? "http" : "https", host, fl_http_port(http));
    char *kc = fl_asprintf("%s/kubeconfig", data_dir);
    if (fl_kubeconfig_write(kc, url, insecure ? NULL : pki.ca_cert_pem, insecure ? NULL : pki.admin_token) != 0)
        fprintf(stderr, "flotilla server: cannot write %s\n", kc);
    char *bkc = fl_asprintf("%s/bootstrap-kubeconfig", data_dir);
    if (fl_kubeconfig_write_user(bkc, url, insecure ? NULL : pki.ca_cert_pem, FL_AUTH_BOOTSTRAP, bootstrap_token))
        fprintf(stderr, "flotilla server: cannot write %s\n", bkc);
    free(bkc);
    fl_log(FL_LOG_INFO, "server", "serving on %s (store rev %lld, %d CRDs, %d agent tokens); kubeconfig: %s", url,
           (long long)fl_store_rev(store), ncrd, nagents, kc);
    /* Controllers are clients of this API like any other, with the same requests, answers
     * and watches, but in process (fl_api_local_client): no TLS, TCP or HTTP in between. */
    fl_client *cp = fl_api_local_client(&api, "flotilla-controller-manager");
    fl_ctrl_manager *ctrl = NULL;
    json_t *notes = resumed_notes(store, resumed_rev);
    for (unsigned i = 0; fl_ctrl_note_names[i]; i++)
        if (json_object_get(notes, fl_ctrl_note_names[i]))
            rec.notes |= 1u << i;
    fl_ctrl_env env = {.cp = cp,
                       .data_dir = data_dir,
                       .stopping = &api.stopping,
                       .resumed_rev = resumed_rev,
                       .resumed_notes = notes};
    if (resumed_rev)
        fl_log(FL_LOG_INFO, "server", "the controllers had finished at revision %lld: they resume there%s",
               (long long)resumed_rev,
               rec.notes & watches_bit() ? ", and the member watches where they had reached" : "");
    fl_ctrl_manager_start(&env, fl_server_controllers, &ctrl);
    json_decref(notes); /* the controllers took what they keep */
    printf("flotilla server listening on %s\nkubeconfig: %s\n", url, kc);
    fflush(stdout);
    free(kc);
    free(url);

    /* Until a signal: once a spell of writes has ended, the objects last written are no
     * longer kept decoded, the informers' hot decodings and the store's values in memory go,
     * and the heap gives back the pages it freed (fl_mem_quiet_due). 5,000 Deployments over
     * 10 clusters held 325 MiB when the store went quiet, 273 MiB with the trim, 263 MiB with
     * the decodings let go too, about 240 MiB with the rest and the long-lived records in
     * slabs of their own (core/keep.h), 222 MiB with the decoder's shared leaves let go, and
     * 127-135 MiB once the idle threads (this one too) had given back their node caches
     * (core/mem.h) and the heap was trimmed again. */
    int sig = -1;
    fl_mem_quiet quiet = {0};
    int64_t trim_again = 0; /* once the threads idle since have given their caches back */
    const struct timespec tick = {0, 250 * 1000000L};

    while ((sig = sigtimedwait(&sigs, NULL, &tick)) < 0) {
        reconciled_tick(&rec, store, ctrl, fl_time_mono_ms());
        if (fl_mem_quiet_due(&quiet, (long long)fl_store_rev(store), (long long)fl_time_mono_ms(), QUIET_MS,
                             QUIET_WRITES)) {
            int64_t t0 = fl_time_mono_ms();
            fl_api_decoded_forget();
            fl_informer_rest_all();
            fl_json_rest();
            fl_store_rest(store);
            fl_node_cache_drain(); /* what those let go of came to this thread's cache */
            fl_mem_trim();
            fl_log(FL_LOG_INFO, "server", "the store is quiet at revision %lld: heap trimmed in %lld ms",
                   (long long)fl_store_rev(store), (long long)(fl_time_mono_ms() - t0));
            trim_again = fl_time_mono_ms() + 2 * FL_NODE_IDLE_MS;
        } else if (trim_again && fl_time_mono_ms() >= trim_again) {
            trim_again = 0;
            fl_mem_trim();
        }
    }
    fl_log(FL_LOG_INFO, "server", "received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    api.stopping = 1;
    fl_ctrl_manager_stop(ctrl);
    fl_client_free(cp);
    fl_http_stop(http);
    fl_auth_free(auth);
    free_token(bootstrap_token);
    fl_store_free(store);
    fl_pki_close(&pki);
    fl_log(FL_LOG_INFO, "server", "stopped");
    return 0;
}
