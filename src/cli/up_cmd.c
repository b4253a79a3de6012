/* up_cmd.c - `flotilla up`: a control plane plus simulated members, joined and Ready.
 *
 * The local default and the README's main job. It runs the other commands of this same
 * binary as child processes, exactly as a user would: `flotilla server`, `flotilla member`
 * for the members, and `flotilla ctl join` for each of them; then it waits until every
 * Cluster is Ready, prints how to use it, and on SIGINT/SIGTERM stops the children.
 *
 * It is restartable on its data directory. The control plane keeps its store there; the
 * simulated members are memory stores with new tokens and a new port each run, so every
 * run joins them again (a join brings the Cluster and its Secret up to date) and the
 * control plane delivers its Works to them again. Nothing a previous run left may be read
 * as this run's: the kubeconfigs it waits for are removed before their writer starts, and
 * only the part of the members' log written by this run counts. The children end with it,
 * also when it is killed: each asks the kernel for SIGTERM when its parent dies. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/up_ha.h"
#include "client/client.h"
#include "client/kubeconfig.h"
#include "core/err.h"
#include "core/file.h"
#include "core/log.h"
#include "core/mem.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla up [--data-dir DIR] [--members N] [--listen ADDR:PORT] [--etcd N [--replicas M]]\n"
               "                   [-- SERVER-FLAG...]\n"
               "\n"
               "Runs a Flotilla control plane and N simulated member clusters (member1..memberN), joins\n"
               "them, waits until they are Ready, and keeps running until Ctrl-C. Run again on the same\n"
               "DIR, it brings the same control plane back and joins fresh members to it.\n"
               "\n"
               "  --data-dir DIR      default .flotilla: DIR/kubeconfig for the control plane,\n"
               "                      DIR/members/<name>.kubeconfig for each member\n"
               "  --members N         default 3\n"
               "  --pull M            the last M members in pull mode, each with its `flotilla agent`\n"
               "  --listen ADDR:PORT  the control plane's address (default 127.0.0.1:6443)\n"
               "  --etcd N            keep the store in a local etcd cluster of N members (/usr/bin/etcd,\n"
               "                      data in DIR/etcd) instead of SQLite (docs/ha.md)\n"
               "  --replicas M        with --etcd: M server replicas on ports PORT..PORT+M-1, one leading\n"
               "                      the controllers; DIR/kubeconfig has contexts replica-1..replica-M\n"
               "  -v, --v N           log verbosity of the server, members and agents (see flotilla server --help)\n"
               "  --logging-format F  text (default) or json, for their logs\n"
               "  -- FLAG...          the rest goes to `flotilla server` as it is, e.g.\n"
               "                      flotilla up -- --token-auth-file tokens.csv\n");
}

/* Run this binary with argv in a child (fl_up_spawn). */
static pid_t spawn(char *const argv[], const char *log_path)
{
    return fl_up_spawn("/proc/self/exe", argv, log_path);
}

static int run_wait(char *const argv[], const char *log_path)
{
    pid_t pid = spawn(argv, log_path);
    if (pid < 0)
        return -1;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Sleep ms, or less when SIGINT or SIGTERM (blocked, in sigs) arrives: then true, so the
 * waits of start-up can be cut short by Ctrl-C as the running state can. */
static bool stop_requested(const sigset_t *sigs, int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    int sig = sigtimedwait(sigs, NULL, &ts);
    return sig == SIGINT || sig == SIGTERM;
}

/* Is the child *pid still running? One that has exited is reaped here and *pid becomes -1,
 * so that nobody signals its pid, which the system may give to another process. */
static bool child_alive(pid_t *pid)
{
    int st;
    if (*pid > 0 && waitpid(*pid, &st, WNOHANG) == 0)
        return true;
    *pid = -1;
    return false;
}

static void stop_child(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return;
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Is the Cluster's Ready condition True? */
static bool cluster_ready(fl_client *cp, const char *name)
{
    fl_gvr gvr = {"cluster.karmada.io/v1alpha1", "clusters"};
    json_t *obj = NULL;
    if (fl_client_get(cp, &gvr, NULL, name, &obj, NULL) != 0)
        return false;
    bool ready = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && !strcmp(t, "Ready") && !strcmp(s, "True"))
            ready = true;
    }
    json_decref(obj);
    return ready;
}

/* What `flotilla up` was asked for, the files it uses and the children it runs. */
typedef struct up_run {
    const char *dir, *listen;
    int members, pull;
    char *mdir, *kc, *slog, *mlog;  /* heap paths under dir */
    pid_t server, member;           /* -1 when not running */
    pid_t *agents;                  /* pull entries */
    sigset_t sigs;                  /* SIGINT and SIGTERM, blocked; taken with sigtimedwait */
    int lock_fd;                    /* DIR/up.lock, held until exit; -1 when not taken */
    char *log_args[5];              /* --logging-format F, --v N as given, packed, NULL-ended */
    char **server_args;             /* what follows "--" on the command line, for the server */
    int nserver_args;
    int etcd, replicas;             /* --etcd N (0: SQLite), --replicas M (1: the one server) */
    fl_up_etcd etcdc;               /* with etcd: the local cluster */
    pid_t *replica;                 /* [replicas], with replicas > 1; -1 when not running */
} up_run;

static void say_stopped(void)
{
    fprintf(stderr, "flotilla up: stopped before it was up\n");
}

/* Parse the options into u. Returns -1 to go on, else the exit code (usage, --help). */
static int parse_options(int argc, char **argv, up_run *u)
{
    static const struct option longopts[] = {{"data-dir", required_argument, 0, 'd'},
                                             {"members", required_argument, 0, 'n'},
                                             {"pull", required_argument, 0, 'p'},
                                             {"listen", required_argument, 0, 'l'},
                                             {"help", no_argument, 0, 'h'},
                                             {"v", required_argument, 0, 'v'},
                                             {"logging-format", required_argument, 0, 'L'},
                                             {"etcd", required_argument, 0, 'e'},
                                             {"replicas", required_argument, 0, 'r'},
                                             {0, 0, 0, 0}};
    int c;
    char *log_format = NULL, *log_v = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hv:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': u->dir = optarg; break;
        case 'v': log_v = optarg[0] == '=' ? optarg + 1 : optarg; break; /* -v=N, as klog */
        case 'L': log_format = optarg; break;
        case 'n': u->members = atoi(optarg); break;
        case 'p': u->pull = atoi(optarg); break;
        case 'l': u->listen = optarg; break;
        case 'e': u->etcd = atoi(optarg); break;
        case 'r': u->replicas = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    char why[256];
    if (fl_log_configure(log_format, log_v, why, sizeof why)) {
        fprintf(stderr, "flotilla up: %s\n", why);
        return 2;
    }
    /* handed on as given to every child that logs: server, member host, agents */
    int k = 0;
    if (log_format) {
        u->log_args[k++] = "--logging-format";
        u->log_args[k++] = log_format;
    }
    if (log_v) {
        u->log_args[k++] = "--v";
        u->log_args[k++] = log_v;
    }
    if (u->members < 0 || u->members > 10000) {
        fprintf(stderr, "flotilla up: --members must be between 0 and 10000\n");
        return 2;
    }
    if (u->etcd < 0 || u->etcd > 7 || u->replicas < 1 || u->replicas > 9) {
        fprintf(stderr, "flotilla up: --etcd must be between 0 and 7, --replicas between 1 and 9\n");
        return 2;
    }
    if (u->replicas > 1 && !u->etcd) {
        fprintf(stderr, "flotilla up: --replicas %d needs --etcd N: replicas share a store in etcd\n", u->replicas);
        return 2;
    }
    if (u->pull < 0 || u->pull > u->members) {
        fprintf(stderr, "flotilla up: --pull must be between 0 and --members (%d)\n", u->members);
        return 2;
    }
    /* getopt_long stops at "--" and leaves optind after it: the rest is the server's */
    if (optind < argc && optind > 0 && !strcmp(argv[optind - 1], "--")) {
        u->server_args = argv + optind;
        u->nserver_args = argc - optind;
    } else if (optind < argc) {
        fprintf(stderr, "flotilla up: unexpected argument \"%s\" (server flags go after \"--\")\n", argv[optind]);
        return 2;
    }
    return -1;
}

/* Wait, up to 15 s, until nobody holds the lock at path, which a child of ours is about to
 * take (what: "server", "member host"): after a kill -9 of a previous `up`, its children are
 * still stopping for a moment. 0 when free, -1 after saying why (or stopped). */
static int wait_lock_free(up_run *u, const char *path, const char *what)
{
    bool said = false;
    for (int i = 0; i < 150; i++) {
        int fd = -1;
        long holder = 0;
        int rc = fl_file_lock(path, &fd, &holder);
        if (rc == 0) {
            close(fd);
            return 0;
        }
        if (rc != FL_EEXIST)
            return 0; /* not ours to judge: the child reports what it finds */
        if (!said)
            fprintf(stderr, "waiting for the previous %s (pid %ld) to stop\n", what, holder);
        said = true;
        if (stop_requested(&u->sigs, 100)) {
            say_stopped();
            return -1;
        }
    }
    fprintf(stderr, "flotilla up: %s still holds %s after 15 s; stop it first\n", what, path);
    return -1;
}

/* Own the data directory for this run before touching anything in it: DIR/up.lock, held until
 * exit (the kernel drops it if we are killed). A second `up` on the same directory would remove
 * the first one's kubeconfigs before its own server is refused. 0, or 1 after saying why. */
static int claim_dir(up_run *u)
{
    char *path = fl_asprintf("%s/up.lock", u->dir);
    long holder = 0;
    int rc = fl_file_lock(path, &u->lock_fd, &holder);
    if (rc == FL_EEXIST)
        fprintf(stderr, "flotilla up: %s is in use by another flotilla up (pid %ld); stop it first or use another --data-dir\n",
                u->dir, holder);
    else if (rc)
        fprintf(stderr, "flotilla up: cannot lock %s: %s\n", path, strerror(errno));
    free(path);
    return rc ? 1 : 0;
}

/* Wait until the server *pid has written its kubeconfig kc (it serves then). Returns 0, or -1
 * after saying why. */
static int wait_kubeconfig(up_run *u, const char *kc, pid_t *pid, const char *log)
{
    for (int i = 0; i < 300 && access(kc, R_OK) != 0; i++) {
        if (!child_alive(pid)) {
            fprintf(stderr, "flotilla up: the control plane exited; see %s\n", log);
            return -1;
        }
        if (stop_requested(&u->sigs, 50)) {
            say_stopped();
            return -1;
        }
    }
    if (access(kc, R_OK) != 0) {
        fprintf(stderr, "flotilla up: the control plane did not serve within 15 s; see %s\n", log);
        return -1;
    }
    return 0;
}

/* Connect to the control plane through DIR/kubeconfig. Returns 0 with *cp set, or -1 after
 * saying why. */
static int connect_server(up_run *u, fl_client **cp)
{
    fl_kubeconfig kcfg;
    memset(&kcfg, 0, sizeof kcfg);
    char *err = NULL;
    if (fl_kubeconfig_load(u->kc, NULL, &kcfg, &err) != 0 || fl_client_new(&kcfg, NULL, cp, &err) != 0) {
        fprintf(stderr, "flotilla up: %s\n", err ? err : "cannot reach the control plane");
        free(err);
        fl_kubeconfig_close(&kcfg);
        return -1;
    }
    fl_kubeconfig_close(&kcfg);
    return 0;
}

/* Start `flotilla server` on data_dir and listen, logging to log, with the etcd cluster's
 * endpoints when there is one and the flags given after "--". */
static pid_t spawn_server(up_run *u, const char *data_dir, const char *listen, const char *log)
{
    char **argv = fl_calloc((size_t)u->nserver_args + 13, sizeof *argv);
    int na = 0;
    char *fixed[] = {"flotilla", "server", "--data-dir", (char *)data_dir, "--listen", (char *)listen};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        argv[na++] = fixed[i];
    for (int i = 0; u->log_args[i]; i++)
        argv[na++] = u->log_args[i];
    if (u->etcd) {
        argv[na++] = "--etcd-servers";
        argv[na++] = u->etcdc.endpoints;
    }
    for (int i = 0; i < u->nserver_args; i++)
        argv[na++] = u->server_args[i];
    pid_t pid = spawn(argv, log);
    free(argv);
    return pid;
}

/* Replica i's (from 0) data directory, log and address: DIR/replica-<i+1>, its .log beside,
 * and the port of --listen plus i. Heap strings. */
static void replica_paths(const up_run *u, int i, char **dir, char **log, char **listen)
{
    *dir = fl_asprintf("%s/replica-%d", u->dir, i + 1);
    *log = fl_asprintf("%s/replica-%d.log", u->dir, i + 1);
    const char *colon = strrchr(u->listen, ':');
    int port = colon ? atoi(colon + 1) : 6443;
    *listen = fl_asprintf("%.*s:%d", colon ? (int)(colon - u->listen) : 9, colon ? u->listen : "127.0.0.1", port + i);
}

static pid_t spawn_replica(up_run *u, int i)
{
    char *dir, *log, *listen;
    replica_paths(u, i, &dir, &log, &listen);
    pid_t pid = spawn_server(u, dir, listen, log);
    free(dir);
    free(log);
    free(listen);
    return pid;
}

/* Start the control plane: one server on DIR, or the replicas (replica 1 first: it makes the
 * certificates the others get a copy of), and connect to it. 0 with *cp, or -1 after a line. */
static int start_control_plane(up_run *u, fl_client **cp)
{
    if (u->replicas == 1) {
        char *server_lock = fl_asprintf("%s/server.lock", u->dir);
        int free_rc = wait_lock_free(u, server_lock, "server");
        free(server_lock);
        if (free_rc != 0)
            return -1;
        u->server = spawn_server(u, u->dir, u->listen, u->slog);
        fprintf(stderr, "starting the control plane on %s (log: %s)\n", u->listen, u->slog);
        return wait_kubeconfig(u, u->kc, &u->server, u->slog) || connect_server(u, cp) ? -1 : 0;
    }
    int rc = 0;
    for (int i = 0; i < u->replicas && rc == 0; i++) {
        char *dir, *log, *listen;
        replica_paths(u, i, &dir, &log, &listen);
        char *kc = fl_asprintf("%s/kubeconfig", dir), *lock = fl_asprintf("%s/server.lock", dir);
        unlink(kc); /* written anew once the replica serves */
        if (i > 0) {
            char *first = fl_asprintf("%s/replica-1", u->dir);
            rc = fl_up_share_pki(first, dir);
            free(first);
        } else if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "flotilla up: cannot create %s: %s\n", dir, strerror(errno));
            rc = -1;
        }
        if (rc == 0 && wait_lock_free(u, lock, "server") != 0)
            rc = -1;
        if (rc == 0) {
            u->replica[i] = spawn_server(u, dir, listen, log);
            fprintf(stderr, "starting replica-%d of the control plane on %s (log: %s)\n", i + 1, listen, log);
            rc = wait_kubeconfig(u, kc, &u->replica[i], log);
        }
        free(kc);
        free(lock);
        free(dir);
        free(log);
        free(listen);
    }
    if (rc == 0 && fl_up_write_replica_kubeconfigs(u->dir, u->replicas) != 0)
        rc = -1;
    return rc == 0 && connect_server(u, cp) == 0 ? 0 : -1;
}

/* The size of path, or 0 when it does not exist yet. */
static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* Has the member host printed its "kubeconfigs:" line at or after offset in its log? That
 * line comes once every kubeconfig is written. */
static bool members_up_since(const char *log_path, long offset)
{
    FILE *f = fopen(log_path, "r");
    if (!f)
        return false;
    bool up = false;
    char line[512];
    if (fseek(f, offset, SEEK_SET) == 0)
        while (!up && fgets(line, sizeof line, f))
            up = strstr(line, "kubeconfigs:") != NULL;
    fclose(f);
    return up;
}

/* Start the simulated members and wait until this run's kubeconfigs are written. A previous
 * run's kubeconfigs name its port and tokens, both gone: they are removed first, and the
 * log (appended to, so it keeps earlier runs) is read only from where this run starts.
 * Returns 0 or -1 after saying why. */
static int start_members(up_run *u)
{
    for (int i = 1; i <= u->members; i++) {
        char *mkc = fl_asprintf("%s/member%d.kubeconfig", u->mdir, i);
        if (unlink(mkc) != 0 && errno != ENOENT)
            fprintf(stderr, "flotilla up: cannot remove %s: %s\n", mkc, strerror(errno));
        free(mkc);
    }
    char *member_lock = fl_asprintf("%s/member.lock", u->mdir);
    int free_rc = wait_lock_free(u, member_lock, "member host");
    free(member_lock);
    if (free_rc != 0)
        return -1;
    char nbuf[16];
    snprintf(nbuf, sizeof nbuf, "%d", u->members);
    fprintf(stderr, "starting %d simulated member%s (log: %s)\n", u->members, u->members == 1 ? "" : "s", u->mlog);
    char *const *la = u->log_args;
    char *member_argv[] = {"flotilla", "member", "--data-dir", u->mdir, "--clusters", nbuf,
                           la[0],      la[1],    la[2],        la[3],   NULL};
    long offset = file_size(u->mlog);
    u->member = spawn(member_argv, u->mlog);
    for (int i = 0; i < 600; i++) {
        if (members_up_since(u->mlog, offset))
            return 0;
        if (!child_alive(&u->member)) {
            fprintf(stderr, "flotilla up: the members exited; see %s\n", u->mlog);
            return -1;
        }
        if (stop_requested(&u->sigs, 50)) {
            say_stopped();
            return -1;
        }
    }
    fprintf(stderr, "flotilla up: the members did not start in 30 s; see %s\n", u->mlog);
    return -1;
}

/* Join every member: the first ones in push mode (`flotilla ctl join`), the last `pull`
 * through an agent each. Returns 0 or -1 after saying which failed. */
static int join_members(up_run *u)
{
    char *bootstrap = fl_asprintf("%s/bootstrap-kubeconfig", u->dir);
    /* with replicas, every agent is told all of them: it moves on when its replica is gone */
    char *urls = NULL;
    for (int i = 0; u->replicas > 1 && i < u->replicas; i++) {
        char *dir, *log, *listen;
        replica_paths(u, i, &dir, &log, &listen);
        char *colon = strrchr(listen, ':');
        *colon = 0;
        bool any = !*listen || !strcmp(listen, "0.0.0.0");
        char *more = fl_asprintf("%s%shttps://%s:%s", urls ? urls : "", urls ? "," : "", any ? "127.0.0.1" : listen,
                                 colon + 1);
        free(urls);
        urls = more;
        free(dir);
        free(log);
        free(listen);
    }
    int rc = 0;
    for (int i = 1; i <= u->members && rc == 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "member%d", i);
        char *mkc = fl_asprintf("%s/%s.kubeconfig", u->mdir, name);
        int jrc = 0;
        if (i <= u->members - u->pull) {
            char *join_argv[] = {"flotilla", "ctl", "--kubeconfig", u->kc, "join", name, "--cluster-kubeconfig", mkc,
                                 NULL};
            jrc = run_wait(join_argv, NULL);
        } else {
            char *alog = fl_asprintf("%s/agent-%s.log", u->dir, name);
            char *const *la = u->log_args;
            char *agent_argv[] = {"flotilla", "agent", "--server-kubeconfig", bootstrap, "--member-kubeconfig", mkc,
                                  "--cluster-name", name, la[0], la[1], la[2], la[3], NULL, NULL, NULL};
            if (urls) { /* after the log flags, in the first free place */
                int k = 8;
                while (agent_argv[k])
                    k++;
                agent_argv[k] = "--server";
                agent_argv[k + 1] = urls;
            }
            pid_t a = spawn(agent_argv, alog);
            u->agents[i - 1 - (u->members - u->pull)] = a;
            fprintf(stderr, "cluster %s joining (Pull) through its agent (log: %s)\n", name, alog);
            free(alog);
            jrc = a > 0 ? 0 : 1;
        }
        free(mkc);
        if (jrc != 0) {
            fprintf(stderr, "flotilla up: joining %s failed\n", name);
            rc = -1;
        }
    }
    free(bootstrap);
    free(urls);
    return rc;
}

/* Wait up to 60 s until every member's Cluster is Ready. Returns 0 or -1 after saying so. */
static int wait_ready(const up_run *u, fl_client *cp)
{
    int ready = 0;
    for (int t = 0; t < 600 && ready < u->members; t++) {
        ready = 0;
        for (int i = 1; i <= u->members; i++) {
            char name[32];
            snprintf(name, sizeof name, "member%d", i);
            ready += cluster_ready(cp, name);
        }
        if (t % 20 == 0 || ready == u->members)
            fprintf(stderr, "waiting for members: %d/%d Ready\n", ready, u->members);
        if (ready < u->members && stop_requested(&u->sigs, 100)) {
            say_stopped();
            return -1;
        }
    }
    if (ready < u->members) {
        fprintf(stderr, "flotilla up: only %d of %d members became Ready in 60 s\n", ready, u->members);
        return -1;
    }
    return 0;
}

/* Run until SIGINT/SIGTERM (exit code 0) or until a child exits (1). Replicas and etcd
 * members are supervised instead: one that exits is started again (a replica that lost the
 * lead of the controllers exits so, to come back as a standby). */
static int serve_until_stopped(up_run *u)
{
    for (;;) {
        if (stop_requested(&u->sigs, 1000))
            return 0;
        for (int i = 0; u->replicas > 1 && i < u->replicas; i++) {
            if (!child_alive(&u->replica[i])) {
                fprintf(stderr, "replica-%d exited; starting it again\n", i + 1);
                u->replica[i] = spawn_replica(u, i);
            }
        }
        for (int i = 0; i < u->etcd; i++) {
            int st;
            if (u->etcdc.pids[i] > 0 && waitpid(u->etcdc.pids[i], &st, WNOHANG) == u->etcdc.pids[i]) {
                fprintf(stderr, "etcd member m%d exited; starting it again (log: %s/m%d.log)\n", i, u->etcdc.dir, i);
                fl_up_etcd_start(&u->etcdc, i);
            }
        }
        bool members_gone = u->member > 0 && !child_alive(&u->member);
        if ((u->replicas == 1 && !child_alive(&u->server)) || members_gone) {
            fprintf(stderr, "flotilla up: a child process exited; see %s and %s\n", u->slog, u->mlog);
            return 1;
        }
    }
}

int fl_cmd_up(int argc, char **argv)
{
    up_run u = {.dir = ".flotilla", .listen = "127.0.0.1:6443", .members = 3, .server = -1, .member = -1, .lock_fd = -1,
                .replicas = 1};
    int rc = parse_options(argc, argv, &u);
    if (rc >= 0)
        return rc;
    if (mkdir(u.dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "flotilla up: cannot create %s: %s\n", u.dir, strerror(errno));
        return 1;
    }
    fl_cli_block_signals(&u.sigs);
    if (claim_dir(&u) != 0)
        return 1;

    u.mdir = fl_asprintf("%s/members", u.dir);
    u.kc = fl_asprintf("%s/kubeconfig", u.dir);
    u.slog = fl_asprintf("%s/server.log", u.dir);
    u.mlog = fl_asprintf("%s/members.log", u.dir);
    unlink(u.kc); /* written anew once the server serves: its presence means "up" */
    u.agents = fl_calloc((size_t)(u.pull > 0 ? u.pull : 1), sizeof *u.agents);
    fl_client *cp = NULL;
    rc = 1;
    u.replica = fl_calloc((size_t)u.replicas, sizeof *u.replica);
    for (int i = 0; i < u.replicas; i++)
        u.replica[i] = -1;
    if (u.etcd) {
        if (fl_up_etcd_prepare(&u.etcdc, u.dir, u.etcd) != 0)
            goto out;
        fprintf(stderr, "starting etcd: %d member%s on %s (logs: %s)\n", u.etcd, u.etcd == 1 ? "" : "s",
                u.etcdc.endpoints, u.etcdc.dir);
        for (int i = 0; i < u.etcd; i++)
            if (fl_up_etcd_start(&u.etcdc, i) != 0)
                goto out;
        if (fl_up_etcd_wait(&u.etcdc, &u.sigs) != 0)
            goto out;
    }
    if (start_control_plane(&u, &cp) != 0)
        goto out;
    if (u.members > 0 && (start_members(&u) != 0 || join_members(&u) != 0 || wait_ready(&u, cp) != 0))
        goto out;
    printf("Flotilla is up: export KUBECONFIG=%s (control plane); members: %s/<name>.kubeconfig. Ctrl-C stops it.\n",
           u.kc, u.mdir);
    fflush(stdout);
    rc = serve_until_stopped(&u);
out:
    fl_client_free(cp);
    for (int i = 0; i < u.pull; i++)
        stop_child(u.agents[i]);
    free(u.agents);
    stop_child(u.member);
    stop_child(u.server);
    for (int i = 0; u.replica && i < u.replicas; i++) /* all at once: a standby need not take the lead */
        if (u.replica[i] > 0)
            kill(u.replica[i], SIGTERM);
    for (int i = 0; u.replica && i < u.replicas; i++)
        stop_child(u.replica[i]);
    free(u.replica);
    if (u.etcd)
        fl_up_etcd_close(&u.etcdc); /* last: the servers' last writes go to it */
    free(u.mdir);
    free(u.kc);
    free(u.slog);
    free(u.mlog);
    if (u.lock_fd >= 0)
        close(u.lock_fd);
    return rc;
}
