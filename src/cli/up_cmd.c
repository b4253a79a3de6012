/* up_cmd.c - `flotilla up`: a control plane plus simulated members, joined and Ready.
 *
 * The local default and the README's main job. It runs the other commands of this same
 * binary as child processes, exactly as a user would: `flotilla server`, `flotilla member`
 * for the members, and `flotilla ctl join` for each of them; then it waits until every
 * Cluster is Ready, prints how to use it, and on SIGINT/SIGTERM stops the children. */
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
#include "client/client.h"
#include "client/kubeconfig.h"
#include "core/err.h"
#include "core/mem.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla up [--data-dir DIR] [--members N] [--listen ADDR:PORT]\n"
               "\n"
               "Runs a Flotilla control plane and N simulated member clusters (member1..memberN), joins\n"
               "them, waits until they are Ready, and keeps running until Ctrl-C.\n"
               "\n"
               "  --data-dir DIR      default .flotilla: DIR/kubeconfig for the control plane,\n"
               "                      DIR/members/<name>.kubeconfig for each member\n"
               "  --members N         default 3\n"
               "  --pull M            the last M members in pull mode, each with its `flotilla agent`\n"
               "  --listen ADDR:PORT  the control plane's address (default 127.0.0.1:6443)\n");
}

static pid_t spawn(char *const argv[], const char *log_path)
{
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
        if (log_path) {
            FILE *f = fopen(log_path, "a");
            if (f) {
                dup2(fileno(f), 1);
                dup2(fileno(f), 2);
            }
        } else {
            dup2(2, 1); /* progress goes to stderr; stdout carries only the final line */
        }
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    return pid;
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

static bool child_alive(pid_t pid)
{
    int st;
    return waitpid(pid, &st, WNOHANG) == 0;
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

int fl_cmd_up(int argc, char **argv)
{
    const char *dir = ".flotilla", *listen = "127.0.0.1:6443";
    int members = 3, pull = 0;
    static const struct option longopts[] = {{"data-dir", required_argument, 0, 'd'},
                                             {"members", required_argument, 0, 'n'},
                                             {"pull", required_argument, 0, 'p'},
                                             {"listen", required_argument, 0, 'l'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'n': members = atoi(optarg); break;
        case 'p': pull = atoi(optarg); break;
        case 'l': listen = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (members < 0 || members > 10000) {
        fprintf(stderr, "flotilla up: --members must be between 0 and 10000\n");
        return 2;
    }
    if (pull < 0 || pull > members) {
        fprintf(stderr, "flotilla up: --pull must be between 0 and --members (%d)\n", members);
        return 2;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "flotilla up: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    sigset_t sigs;
    fl_cli_block_signals(&sigs);

    char *mdir = fl_asprintf("%s/members", dir);
    char *kc = fl_asprintf("%s/kubeconfig", dir);
    char *slog = fl_asprintf("%s/server.log", dir);
    char *mlog = fl_asprintf("%s/members.log", dir);
    char nbuf[16];
    snprintf(nbuf, sizeof nbuf, "%d", members);
    unlink(kc); /* written anew once the server serves: its presence means "up" */
    char *server_argv[] = {"flotilla", "server", "--data-dir", (char *)dir, "--listen", (char *)listen, NULL};
    pid_t server = spawn(server_argv, slog);
    pid_t member = -1;
    pid_t *agents = fl_calloc((size_t)(pull > 0 ? pull : 1), sizeof *agents);
    fl_client *cp = NULL;
    int rc = 1;
    fprintf(stderr, "starting the control plane on %s (log: %s)\n", listen, slog);
    for (int i = 0; i < 300 && access(kc, R_OK) != 0; i++) {
        if (!child_alive(server)) {
            fprintf(stderr, "flotilla up: the control plane exited; see %s\n", slog);
            server = -1;
            goto out;
        }
        sleep_ms(50);
    }
    fl_kubeconfig kcfg;
    memset(&kcfg, 0, sizeof kcfg);
    char *err = NULL;
    if (fl_kubeconfig_load(kc, NULL, &kcfg, &err) != 0 || fl_client_new(&kcfg, NULL, &cp, &err) != 0) {
        fprintf(stderr, "flotilla up: %s\n", err ? err : "cannot reach the control plane");
        free(err);
        fl_kubeconfig_close(&kcfg);
        goto out;
    }
    fl_kubeconfig_close(&kcfg);
    if (members > 0) {
        fprintf(stderr, "starting %d simulated member%s (log: %s)\n", members, members == 1 ? "" : "s", mlog);
        char *member_argv[] = {"flotilla", "member", "--data-dir", mdir, "--clusters", nbuf, NULL};
        member = spawn(member_argv, mlog);
        char *last = fl_asprintf("%s/member%d.kubeconfig", mdir, members);
        /* the kubeconfigs of a previous run may be there: wait for this run's member log line */
        for (int i = 0; i < 600; i++) {
            FILE *f = fopen(mlog, "r");
            char line[512];
            bool up = false;
            while (f && fgets(line, sizeof line, f))
                if (strstr(line, "kubeconfigs:"))
                    up = true;
            if (f)
                fclose(f);
            if (up && access(last, R_OK) == 0)
                break;
            if (!child_alive(member)) {
                fprintf(stderr, "flotilla up: the members exited; see %s\n", mlog);
                member = -1;
                free(last);
                goto out;
            }
            sleep_ms(50);
        }
        free(last);
        /* the first members join in push mode; the last `pull` run an agent each */
        char *bootstrap = fl_asprintf("%s/bootstrap-kubeconfig", dir);
        for (int i = 1; i <= members; i++) {
            char name[32];
            snprintf(name, sizeof name, "member%d", i);
            char *mkc = fl_asprintf("%s/%s.kubeconfig", mdir, name);
            int jrc = 0;
            if (i <= members - pull) {
                char *join_argv[] = {"flotilla", "ctl", "--kubeconfig", kc, "join", name, "--cluster-kubeconfig", mkc, NULL};
                jrc = run_wait(join_argv, NULL);
            } else {
                char *alog = fl_asprintf("%s/agent-%s.log", dir, name);
                char *agent_argv[] = {"flotilla", "agent", "--server-kubeconfig", bootstrap, "--member-kubeconfig", mkc,
                                      "--cluster-name", name, NULL};
                pid_t a = spawn(agent_argv, alog);
                agents[i - 1 - (members - pull)] = a;
                fprintf(stderr, "cluster %s joining (Pull) through its agent (log: %s)\n", name, alog);
                free(alog);
                jrc = a > 0 ? 0 : 1;
            }
            free(mkc);
            if (jrc != 0) {
                fprintf(stderr, "flotilla up: joining %s failed\n", name);
                free(bootstrap);
                goto out;
            }
        }
        free(bootstrap);
        int ready = 0;
        for (int t = 0; t < 600 && ready < members; t++) {
            ready = 0;
            for (int i = 1; i <= members; i++) {
                char name[32];
                snprintf(name, sizeof name, "member%d", i);
                ready += cluster_ready(cp, name);
            }
            if (t % 20 == 0 || ready == members)
                fprintf(stderr, "waiting for members: %d/%d Ready\n", ready, members);
            if (ready < members)
                sleep_ms(100);
        }
        if (ready < members) {
            fprintf(stderr, "flotilla up: only %d of %d members became Ready in 60 s\n", ready, members);
            goto out;
        }
    }
    printf("Flotilla is up: export KUBECONFIG=%s (control plane); members: %s/<name>.kubeconfig. Ctrl-C stops it.\n",
           kc, mdir);
    fflush(stdout);
    rc = 0;
    for (;;) {
        struct timespec ts = {1, 0};
        int sig = sigtimedwait(&sigs, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM)
            break;
        if (!child_alive(server) || (member > 0 && !child_alive(member))) {
            fprintf(stderr, "flotilla up: a child process exited; see %s and %s\n", slog, mlog);
            rc = 1;
            break;
        }
    }
out:
    fl_client_free(cp);
    for (int i = 0; i < pull; i++)
        stop_child(agents[i]);
    free(agents);
    stop_child(member);
    stop_child(server);
    free(mdir);
    free(kc);
    free(slog);
    free(mlog);
    return rc;
}
