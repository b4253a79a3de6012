/* etcdtest.h - a real etcd for a unit test: one member, or a cluster of three.
 *
 * A test that needs etcd starts it here and talks to it over loopback like the server will:
 *
 *     fl_etcdtest t;
 *     if (fl_etcdtest_start(&t, 1) != 0)
 *         fail_msg("%s", t.error);          // never a skip: no etcd is a failure
 *     ... fl_etcd_open with .endpoints = t.endpoints ...
 *     fl_etcdtest_stop(&t);
 *
 * Each member listens on a free 127.0.0.1 port pair (client, peer) and keeps its data and
 * its log under one fresh directory in $TMPDIR (t.dir, removed by fl_etcdtest_stop), so tests
 * run in parallel without meeting. The members die with the test process (PR_SET_PDEATHSIG),
 * so a crashed test leaves no etcd behind. fl_etcdtest_kill and fl_etcdtest_restart take one
 * member down and up again, for failover tests.
 *
 * The binary is $FL_ETCD_BIN, else "etcd" on $PATH (Debian's etcd-server; scripts/setup.sh
 * installs it). Starting waits until every member's /health says true (the cluster has a
 * leader), at most FL_ETCDTEST_START_MS; when it cannot, t.error says why and, when a
 * member wrote one, where its log is.
 *
 * Everything is static inline so that a test includes this header and nothing else; only
 * POSIX and Linux calls, no Flotilla code. Not thread-safe: call it from the test's thread. */
#ifndef FL_ETCDTEST_H
#define FL_ETCDTEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FL_ETCDTEST_MAX 3
#define FL_ETCDTEST_START_MS 20000

typedef struct fl_etcdtest {
    int n;                                   /* members */
    pid_t pid[FL_ETCDTEST_MAX];              /* 0 when the member is down */
    int client_port[FL_ETCDTEST_MAX];
    int peer_port[FL_ETCDTEST_MAX];
    char endpoint[FL_ETCDTEST_MAX][64];      /* "http://127.0.0.1:<client port>" */
    char endpoints[FL_ETCDTEST_MAX * 64];    /* all of them, comma-separated, member 0 first */
    char dir[256];                           /* data dirs m0, m1, ... and logs m0.log, ... */
    char error[768];                         /* why start or restart failed */
} fl_etcdtest;

static inline long long fl_etcdtest_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A port free on 127.0.0.1 now (the socket that found it is returned in *fd, still open, so
 * that the next call cannot find the same one; close it just before etcd binds). -1 on error. */
static inline int fl_etcdtest_free_port(int *fd)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(s, (struct sockaddr *)&a, &len) != 0) {
        if (s >= 0)
            close(s);
        return -1;
    }
    *fd = s;
    return ntohs(a.sin_port);
}

/* Does GET /health on 127.0.0.1:port answer {"health":"true"} within timeout_ms? */
static inline bool fl_etcdtest_healthy(int port, int timeout_ms)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return false;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char buf[2048];
    size_t got = 0;
    bool ok = false;
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
        static const char req[] = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        if (write(s, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
            ssize_t r;
            while (got < sizeof buf - 1 && (r = read(s, buf + got, sizeof buf - 1 - got)) > 0)
                got += (size_t)r;
            buf[got] = 0;
            ok = strstr(buf, "\"health\":\"true\"") != NULL;
        }
    }
    close(s);
    return ok;
}

/* The etcd binary to run: $FL_ETCD_BIN, else the first "etcd" on $PATH; false when none. */
static inline bool fl_etcdtest_binary(char *out, size_t cap)
{
    const char *env = getenv("FL_ETCD_BIN");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, cap, "%s/etcd", d);
        if (access(out, X_OK) == 0)
            return true;
    }
    return false;
}

/* Start member i (its ports and dir already chosen) in the background. 0 or -1 (t->error). */
static inline int fl_etcdtest_spawn(fl_etcdtest *t, int i)
{
    char bin[512];
    if (!fl_etcdtest_binary(bin, sizeof bin)) {
        const char *env = getenv("FL_ETCD_BIN");
        if (env && *env)
            snprintf(t->error, sizeof t->error, "etcdtest: FL_ETCD_BIN=%s is not an executable file", env);
        else
            snprintf(t->error, sizeof t->error,
                     "etcdtest: no etcd on PATH: install Debian's etcd-server (scripts/setup.sh does)");
        return -1;
    }
    char name[16], data[320], log[320], out[320], client[64], peer[64], cluster[FL_ETCDTEST_MAX * 64] = "";
    snprintf(name, sizeof name, "m%d", i);
    snprintf(data, sizeof data, "%s/m%d", t->dir, i);
    snprintf(log, sizeof log, "%s/m%d.log", t->dir, i);
    snprintf(out, sizeof out, "%s/m%d.out", t->dir, i);
    snprintf(client, sizeof client, "http://127.0.0.1:%d", t->client_port[i]);
    snprintf(peer, sizeof peer, "http://127.0.0.1:%d", t->peer_port[i]);
    for (int j = 0; j < t->n; j++) {
        size_t l = strlen(cluster);
        snprintf(cluster + l, sizeof cluster - l, "%sm%d=http://127.0.0.1:%d", j ? "," : "", j, t->peer_port[j]);
    }
    char token[64];
    snprintf(token, sizeof token, "etcdtest-%d-%d", (int)getpid(), t->client_port[0]);
    char *argv[] = {bin, "--name", name, "--data-dir", data, "--listen-client-urls", client,
                    "--advertise-client-urls", client, "--listen-peer-urls", peer,
                    "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
                    "--initial-cluster-state", "new", "--initial-cluster-token", token,
                    "--logger", "zap", "--log-outputs", log, "--log-level", "warn", NULL};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(t->error, sizeof t->error, "etcdtest: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no etcd outlives its test */
        if (getppid() != parent)
            _exit(1);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        execv(bin, argv);
        _exit(127);
    }
    t->pid[i] = pid;
    return 0;
}

/* Wait until the members that are up all say healthy (a leader is elected), at most
 * deadline_ms from now. 0 or -1 (t->error). */
static inline int fl_etcdtest_wait(fl_etcdtest *t, int deadline_ms)
{
    long long end = fl_etcdtest_now_ms() + deadline_ms;
    for (;;) {
        bool all = true;
        for (int i = 0; i < t->n; i++) {
            if (!t->pid[i])
                continue;
            int st;
            if (waitpid(t->pid[i], &st, WNOHANG) == t->pid[i]) {
                t->pid[i] = 0;
                snprintf(t->error, sizeof t->error, "etcdtest: member m%d exited (status %d) while starting: see %s/m%d.log and %s/m%d.out",
                         i, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), t->dir, i, t->dir, i);
                return -1;
            }
            if (all && !fl_etcdtest_healthy(t->client_port[i], 500))
                all = false;
        }
        if (all)
            return 0;
        if (fl_etcdtest_now_ms() >= end) {
            snprintf(t->error, sizeof t->error, "etcdtest: etcd not healthy within %d ms: see the logs in %s", deadline_ms,
                     t->dir);
            return -1;
        }
        usleep(50 * 1000);
    }
}

static inline int fl_etcdtest_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

/* Kill every member and remove t->dir (unless $FL_ETCDTEST_KEEP is set, to read the logs). */
static inline void fl_etcdtest_stop(fl_etcdtest *t)
{
    for (int i = 0; i < t->n; i++) {
        if (t->pid[i] > 0) {
            kill(t->pid[i], SIGKILL);
            waitpid(t->pid[i], NULL, 0);
            t->pid[i] = 0;
        }
    }
    if (t->dir[0] && !getenv("FL_ETCDTEST_KEEP"))
        nftw(t->dir, fl_etcdtest_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    t->dir[0] = 0;
}

/* Start a fresh etcd of members (1 to FL_ETCDTEST_MAX) members and wait until it serves.
 * 0, or -1 with t->error set and nothing left running. */
static inline int fl_etcdtest_start(fl_etcdtest *t, int members)
{
    memset(t, 0, sizeof *t);
    if (members < 1 || members > FL_ETCDTEST_MAX) {
        snprintf(t->error, sizeof t->error, "etcdtest: %d members asked for, 1 to %d possible", members, FL_ETCDTEST_MAX);
        return -1;
    }
    t->n = members;
    const char *tmp = getenv("TMPDIR");
    snprintf(t->dir, sizeof t->dir, "%s/etcdtest.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(t->dir)) {
        snprintf(t->error, sizeof t->error, "etcdtest: mkdtemp %s: %s", t->dir, strerror(errno));
        t->dir[0] = 0;
        return -1;
    }
    int fds[2 * FL_ETCDTEST_MAX];
    int nfd = 0;
    for (int i = 0; i < members; i++) {
        t->client_port[i] = fl_etcdtest_free_port(&fds[nfd]);
        nfd += t->client_port[i] > 0;
        t->peer_port[i] = fl_etcdtest_free_port(&fds[nfd]);
        nfd += t->peer_port[i] > 0;
        snprintf(t->endpoint[i], sizeof t->endpoint[i], "http://127.0.0.1:%d", t->client_port[i]);
        size_t l = strlen(t->endpoints);
        snprintf(t->endpoints + l, sizeof t->endpoints - l, "%s%s", i ? "," : "", t->endpoint[i]);
    }
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
    if (nfd != 2 * members) {
        snprintf(t->error, sizeof t->error, "etcdtest: no free port on 127.0.0.1");
        fl_etcdtest_stop(t);
        return -1;
    }
    for (int i = 0; i < members; i++) {
        if (fl_etcdtest_spawn(t, i) != 0) {
            char keep[sizeof t->error];
            memcpy(keep, t->error, sizeof keep);
            fl_etcdtest_stop(t);
            memcpy(t->error, keep, sizeof keep);
            return -1;
        }
    }
    if (fl_etcdtest_wait(t, FL_ETCDTEST_START_MS) != 0) {
        char keep[sizeof t->error];
        memcpy(keep, t->error, sizeof keep);
        fl_etcdtest_stop(t);
        memcpy(t->error, keep, sizeof keep);
        return -1;
    }
    return 0;
}

/* Kill member i at once (SIGKILL: no goodbye to its peers), as a crash would. */
static inline void fl_etcdtest_kill(fl_etcdtest *t, int i)
{
    if (i >= 0 && i < t->n && t->pid[i] > 0) {
        kill(t->pid[i], SIGKILL);
        waitpid(t->pid[i], NULL, 0);
        t->pid[i] = 0;
    }
}

/* Start member i again on its old ports and data, and wait until the members up are healthy.
 * 0 or -1 (t->error). */
static inline int fl_etcdtest_restart(fl_etcdtest *t, int i)
{
    if (i < 0 || i >= t->n || t->pid[i] > 0) {
        snprintf(t->error, sizeof t->error, "etcdtest: member %d is not a stopped member", i);
        return -1;
    }
    if (fl_etcdtest_spawn(t, i) != 0)
        return -1;
    return fl_etcdtest_wait(t, FL_ETCDTEST_START_MS);
}

#endif
