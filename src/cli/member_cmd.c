/* member_cmd.c - `flotilla member`: simulated member clusters (src/member/). One member host
 * owns a data directory at a time (DIR/member.lock), as one server does its own: a second
 * would take over the kubeconfigs the first's clients read. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kinds.h"
#include "cli/cli.h"
#include "core/err.h"
#include "core/file.h"
#include "core/mem.h"
#include "core/log.h"
#include "member/member.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla member --data-dir DIR [--clusters N] [--listen ADDR:PORT] [options]\n"
               "\n"
               "Runs N simulated member clusters in one process, each a Kubernetes API of its own at\n"
               "URL/clusters/<name>, with a workload simulator that moves status forward.\n"
               "\n"
               "  --data-dir DIR            PKI and one kubeconfig per cluster: DIR/<name>.kubeconfig (required)\n"
               "  --clusters N              how many clusters (default 1)\n"
               "  --name-prefix P           cluster names P1..PN (default member)\n"
               "  --first-index I           number of the first cluster (default 1)\n"
               "  --listen ADDR:PORT        default 127.0.0.1:0 (a free port)\n"
               "  --insecure-http           plain HTTP without tokens (loopback only)\n"
               "  --ready-per-second R      replicas becoming ready per second (default 10)\n"
               "  --job-seconds S           seconds until a Job completes (default 2)\n"
               "  --nodes N                 Nodes per cluster (default 3)\n"
               "  -v, --v N                 log verbosity: 0 (default) error, warn and info; 2 or more adds debug\n"
               "  --logging-format F        text (default) or json: one JSON object per line on stderr\n"
               "\n"
               "Faults at run time: PUT URL/admin/clusters/<name>/fault {\"down\":true} (or slowMs, partition)\n"
               "with the bearer token in DIR/pki/admin.token.\n");
}

int fl_cmd_member(int argc, char **argv)
{
    fl_member_host_config cfg = {.listen = "127.0.0.1:0", .clusters = 1};
    static const struct option longopts[] = {
        {"data-dir", required_argument, 0, 'd'},       {"clusters", required_argument, 0, 'n'},
        {"name-prefix", required_argument, 0, 'p'},    {"first-index", required_argument, 0, 'f'},
        {"listen", required_argument, 0, 'l'},         {"insecure-http", no_argument, 0, 'k'},
        {"ready-per-second", required_argument, 0, 'r'}, {"job-seconds", required_argument, 0, 'j'},
        {"nodes", required_argument, 0, 'N'},          {"help", no_argument, 0, 'h'},
        {"v", required_argument, 0, 'v'},              {"logging-format", required_argument, 0, 'L'},
        {0, 0, 0, 0}};
    int c;
    const char *log_format = NULL, *log_v = NULL; /* core/log.h */
    optind = 1;
    while ((c = getopt_long(argc, argv, "hv:", longopts, NULL)) != -1) {
        switch (c) {
        case 'v': log_v = optarg[0] == '=' ? optarg + 1 : optarg; break; /* -v=N, as klog */
        case 'L': log_format = optarg; break;
        case 'd': cfg.data_dir = optarg; break;
        case 'n': cfg.clusters = atoi(optarg); break;
        case 'p': cfg.name_prefix = optarg; break;
        case 'f': cfg.first_index = atoi(optarg); break;
        case 'l': cfg.listen = optarg; break;
        case 'k': cfg.insecure_http = true; break;
        case 'r': cfg.sim.ready_per_second = atof(optarg); break;
        case 'j': cfg.sim.job_seconds = atoi(optarg); break;
        case 'N': cfg.sim.nodes = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    char why[256];
    if (fl_log_configure(log_format, log_v, why, sizeof why)) {
        fprintf(stderr, "flotilla member: %s\n", why);
        return 2;
    }
    if (!cfg.data_dir) {
        fprintf(stderr, "flotilla member: --data-dir is required\n");
        return 2;
    }
    if (cfg.clusters < 1 || cfg.clusters > 100000) {
        fprintf(stderr, "flotilla member: --clusters must be between 1 and 100000\n");
        return 2;
    }
    if (cfg.insecure_http && !fl_cli_is_loopback(cfg.listen)) {
        fprintf(stderr, "flotilla member: --insecure-http is only allowed on a loopback address, not %s\n",
                cfg.listen);
        return 2;
    }
    if (mkdir(cfg.data_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "flotilla member: cannot create %s: %s\n", cfg.data_dir, strerror(errno));
        return 1;
    }
    char *lock = fl_asprintf("%s/member.lock", cfg.data_dir);
    int lock_fd = -1; /* held until exit, when the kernel lets it go (kill -9 too) */
    long holder = 0;
    int lrc = fl_file_lock(lock, &lock_fd, &holder);
    if (lrc == FL_EEXIST)
        fprintf(stderr, "flotilla member: %s is in use by another flotilla member (pid %ld); stop it first or use "
                        "another --data-dir\n", cfg.data_dir, holder);
    else if (lrc)
        fprintf(stderr, "flotilla member: cannot lock %s: %s\n", lock, strerror(errno));
    free(lock);
    if (lrc)
        return 1;
    sigset_t sigs;
    fl_cli_block_signals(&sigs);
    fl_kinds_init();
    fl_member_host *h = NULL;
    char *err = NULL;
    if (fl_member_host_start(&cfg, &h, &err) != 0) {
        fprintf(stderr, "flotilla member: %s\n", err ? err : "cannot start");
        free(err);
        close(lock_fd);
        return 1;
    }
    printf("flotilla member: %d cluster%s at %s/clusters/<name>; kubeconfigs: %s/<name>.kubeconfig\n", cfg.clusters,
           cfg.clusters == 1 ? "" : "s", fl_member_host_url(h), cfg.data_dir);
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    fl_log(FL_LOG_INFO, "member", "received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    fl_member_host_stop(h);
    close(lock_fd);
    return 0;
}
