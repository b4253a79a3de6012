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
 * Each member listens on free 127.0.0.1 ports (client, peer, and metrics: plain http /health
 * and /metrics, which the waits use, even when the client port speaks TLS) and keeps its data and
 * its log under one fresh directory in $TMPDIR (t.dir, removed by fl_etcdtest_stop), so tests
 * run in parallel without meeting. The members die with the test process (PR_SET_PDEATHSIG),
 * so a crashed test leaves no etcd behind. fl_etcdtest_kill and fl_etcdtest_restart take one
 * member down and up again, for failover tests; fl_etcdtest_leader says which one leads, to
 * kill the leader (an election follows) or a follower (nothing to elect).
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
    int metrics_port[FL_ETCDTEST_MAX];       /* plain http /health and /metrics, even with TLS */
    char endpoint[FL_ETCDTEST_MAX][64];      /* "http://127.0.0.1:<client port>" (https with TLS) */
    char endpoints[FL_ETCDTEST_MAX * 64];    /* all of them, comma-separated, member 0 first */
    char dir[256];                           /* data dirs m0, m1, ... and logs m0.log, ... */
    char extra[8][128];                      /* more flags for every member ("" ends them) */
    char tls[3][256];                        /* server cert, its key, the CA of client certs */
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

/* GET path from 127.0.0.1:port with plain HTTP/1.0, at most cap - 1 bytes of the answer
 * (headers included) into buf, NUL-terminated. The bytes read. */
static inline size_t fl_etcdtest_get(int port, const char *path, char *buf, size_t cap, int timeout_ms)
{
    size_t got = 0;
    buf[0] = 0;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return 0;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
        char req[256];
        int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
        if (write(s, req, (size_t)n) == n) {
            ssize_t r;
            while (got < cap - 1 && (r = read(s, buf + got, cap - 1 - got)) > 0)
                got += (size_t)r;
        }
    }
    close(s);
    buf[got] = 0;
    return got;
}

/* Does GET /health on 127.0.0.1:port (a member's metrics port, or its client port when that
 * is plain http) say true (the member has a leader) within timeout_ms? */
static inline bool fl_etcdtest_healthy(int port, int timeout_ms)
{
    char buf[2048];
    fl_etcdtest_get(port, "/health", buf, sizeof buf, timeout_ms);
    return strstr(buf, "\"health\":\"true\"") != NULL;
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
    snprintf(client, sizeof client, "%s", t->endpoint[i]);
    char metrics[64];
    snprintf(metrics, sizeof metrics, "http://127.0.0.1:%d", t->metrics_port[i]);
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
                    "--logger", "zap", "--log-outputs", log, "--log-level", "warn",
                    "--listen-metrics-urls", metrics,
                    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t argc = 0;
    while (argv[argc])
        argc++;
    if (t->tls[0][0]) {
        argv[argc++] = "--cert-file";
        argv[argc++] = t->tls[0];
        argv[argc++] = "--key-file";
        argv[argc++] = t->tls[1];
        argv[argc++] = "--trusted-ca-file";
        argv[argc++] = t->tls[2];
        argv[argc++] = "--client-cert-auth";
    }
    for (int k = 0; k < 8 && t->extra[k][0]; k++)
        argv[argc++] = t->extra[k];
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
            if (all && !fl_etcdtest_healthy(t->metrics_port[i], 500))
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

/* Start a fresh etcd of members (1 to FL_ETCDTEST_MAX) members and wait until it serves;
 * extra, when not NULL, is a NULL-terminated list of up to 8 more flags for every member
 * ("--experimental-watch-progress-notify-interval=300ms"). 0, or -1 with t->error set and
 * nothing left running. */
static inline int fl_etcdtest_start_tls(fl_etcdtest *t, int members, const char *const *extra, const char *cert_file,
                                        const char *key_file, const char *ca_file);
static inline int fl_etcdtest_start_with(fl_etcdtest *t, int members, const char *const *extra)
{
    return fl_etcdtest_start_tls(t, members, extra, NULL, NULL, NULL);
}

/* fl_etcdtest_start_with, and the client port speaks TLS only: the members serve cert_file
 * (with key_file; its SANs must hold 127.0.0.1) and require a client certificate signed by
 * the CA in ca_file. t->endpoint and t->endpoints are https:// URLs; peers, /health and
 * /metrics stay plain. */
static inline int fl_etcdtest_start_tls(fl_etcdtest *t, int members, const char *const *extra, const char *cert_file,
                                        const char *key_file, const char *ca_file)
{
    memset(t, 0, sizeof *t);
    if (cert_file && key_file && ca_file) {
        snprintf(t->tls[0], sizeof t->tls[0], "%s", cert_file);
        snprintf(t->tls[1], sizeof t->tls[1], "%s", key_file);
        snprintf(t->tls[2], sizeof t->tls[2], "%s", ca_file);
    }
    for (int k = 0; extra && extra[k]; k++) {
        if (k == 8 || strlen(extra[k]) >= sizeof t->extra[k]) {
            snprintf(t->error, sizeof t->error, "etcdtest: more than 8 extra flags, or one over 127 bytes");
            return -1;
        }
        snprintf(t->extra[k], sizeof t->extra[k], "%s", extra[k]);
    }
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
    int fds[3 * FL_ETCDTEST_MAX];
    int nfd = 0;
    for (int i = 0; i < members; i++) {
        t->client_port[i] = fl_etcdtest_free_port(&fds[nfd]);
        nfd += t->client_port[i] > 0;
        t->peer_port[i] = fl_etcdtest_free_port(&fds[nfd]);
        nfd += t->peer_port[i] > 0;
        t->metrics_port[i] = fl_etcdtest_free_port(&fds[nfd]);
        nfd += t->metrics_port[i] > 0;
        snprintf(t->endpoint[i], sizeof t->endpoint[i], "%s://127.0.0.1:%d", t->tls[0][0] ? "https" : "http",
                 t->client_port[i]);
        size_t l = strlen(t->endpoints);
        snprintf(t->endpoints + l, sizeof t->endpoints - l, "%s%s", i ? "," : "", t->endpoint[i]);
    }
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
    if (nfd != 3 * members) {
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

/* The index of the member that leads now, by each member's etcd_server_is_leader metric,
 * or -1 when none says it leads. */
static inline int fl_etcdtest_leader(const fl_etcdtest *t)
{
    size_t cap = 4u << 20; /* the metrics page is ~150 KiB */
    char *buf = malloc(cap);
    int found = -1;
    for (int i = 0; buf && found < 0 && i < t->n; i++) {
        if (t->pid[i] > 0) {
            fl_etcdtest_get(t->metrics_port[i], "/metrics", buf, cap, 2000);
            if (strstr(buf, "\netcd_server_is_leader 1"))
                found = i;
        }
    }
    free(buf);
    return found;
}

/* fl_etcdtest_start_with, no extra flags. */
static inline int fl_etcdtest_start(fl_etcdtest *t, int members)
{
    return fl_etcdtest_start_with(t, members, NULL);
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

/* Start member i again on its old ports and data. When the members up then make a quorum,
 * wait until they are all healthy (a leader is elected); with fewer there can be no leader,
 * so return once the process runs. 0 or -1 (t->error). */
static inline int fl_etcdtest_restart(fl_etcdtest *t, int i)
{
    if (i < 0 || i >= t->n || t->pid[i] > 0) {
        snprintf(t->error, sizeof t->error, "etcdtest: member %d is not a stopped member", i);
        return -1;
    }
    if (fl_etcdtest_spawn(t, i) != 0)
        return -1;
    int up = 0;
    for (int j = 0; j < t->n; j++)
        up += t->pid[j] > 0;
    return up > t->n / 2 ? fl_etcdtest_wait(t, FL_ETCDTEST_START_MS) : 0;
}

#endif
