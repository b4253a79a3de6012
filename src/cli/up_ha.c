/* up_ha.c - the etcd cluster and the replicas of `flotilla up --etcd N --replicas M` (up_ha.h). */
#include "cli/up_ha.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/kubeconfig.h"
#include "core/err.h"
#include "core/file.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* A loopback port nobody listens on now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int fl_up_etcd_prepare(fl_up_etcd *e, const char *dir, int n)
{
    memset(e, 0, sizeof *e);
    e->n = n;
    e->client = fl_calloc((size_t)n, sizeof *e->client);
    e->peer = fl_calloc((size_t)n, sizeof *e->peer);
    e->pids = fl_calloc((size_t)n, sizeof *e->pids);
    for (int i = 0; i < n; i++)
        e->pids[i] = -1;
    e->dir = fl_asprintf("%s/etcd", dir);
    if (mkdir(e->dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "flotilla up: cannot create %s: %s\n", e->dir, strerror(errno));
        return 1;
    }
    char *ports = fl_asprintf("%s/ports", e->dir);
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (fl_read_file(ports, 4096, &text, &len) == 0) {
        /* a cluster made by an earlier run: its members know each other at these ports */
        int got = 0;
        char *p = text;
        for (int c, q, used; got < n && sscanf(p, "%d %d\n%n", &c, &q, &used) == 2; got++, p += used) {
            e->client[got] = c;
            e->peer[got] = q;
        }
        int more, m2, used2 = 0;
        if (got != n || sscanf(p, "%d %d\n%n", &more, &m2, &used2) == 2) {
            fprintf(stderr, "flotilla up: %s holds an etcd cluster of another size than --etcd %d; give its size or "
                            "remove %s\n", e->dir, n, e->dir);
            rc = 1;
        }
    } else {
        fl_strbuf sb = {0};
        for (int i = 0; i < n; i++) {
            e->client[i] = free_port();
            e->peer[i] = free_port();
            fl_strbuf_printf(&sb, "%d %d\n", e->client[i], e->peer[i]);
        }
        if (fl_write_file_atomic(ports, sb.p, sb.len, 0600) != 0) {
            fprintf(stderr, "flotilla up: cannot write %s\n", ports);
            rc = 1;
        }
        fl_strbuf_close(&sb);
    }
    free(text);
    free(ports);
    fl_strbuf eps = {0};
    for (int i = 0; i < n; i++)
        fl_strbuf_printf(&eps, "%shttp://127.0.0.1:%d", i ? "," : "", e->client[i]);
    e->endpoints = eps.p ? eps.p : fl_strdup("");
    return rc;
}

/* (up_ha.h) Run exe with argv in a child, its output appended to log_path (or to stderr).
 * The child gets SIGTERM when this process dies, however it dies, so a `kill -9` of `up`
 * leaves no orphans. Returns the child's pid, or -1. */
pid_t fl_up_spawn(const char *exe, char *const argv[], const char *log_path)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* the parent may have died between fork and prctl: then no signal would ever come */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
            _exit(127);
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
        execv(exe, argv);
        _exit(127);
    }
    return pid;
}

int fl_up_etcd_start(fl_up_etcd *e, int i)
{
    fl_strbuf cluster = {0};
    for (int j = 0; j < e->n; j++)
        fl_strbuf_printf(&cluster, "%sm%d=http://127.0.0.1:%d", j ? "," : "", j, e->peer[j]);
    char *name = fl_asprintf("m%d", i), *data = fl_asprintf("%s/m%d", e->dir, i);
    char *curl = fl_asprintf("http://127.0.0.1:%d", e->client[i]), *purl = fl_asprintf("http://127.0.0.1:%d", e->peer[i]);
    char *log = fl_asprintf("%s/m%d.log", e->dir, i);
    char *argv[] = {FL_UP_ETCD, "--name", name, "--data-dir", data, "--listen-client-urls", curl,
                    "--advertise-client-urls", curl, "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                    "--initial-cluster", cluster.p, "--initial-cluster-token", "flotilla-up",
                    "--initial-cluster-state", "new", "--log-level", "warn", "--logger", "zap",
                    /* a replica's head follows etcd's revision between its own keys' changes */
                    "--experimental-watch-progress-notify-interval=1s", NULL};
    pid_t pid = fl_up_spawn(FL_UP_ETCD, argv, log);
    e->pids[i] = pid;
    free(name);
    free(data);
    free(curl);
    free(purl);
    free(log);
    fl_strbuf_close(&cluster);
    return pid > 0 ? 0 : -1;
}

/* Does the member on port answer GET /health with health true? */
static bool healthy(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char buf[2048];
    size_t got = 0;
    static const char req[] = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
        ssize_t r;
        while (got < sizeof buf - 1 && (r = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
            got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return strstr(buf, "\"health\":\"true\"") != NULL;
}

int fl_up_etcd_wait(fl_up_etcd *e, const sigset_t *sigs)
{
    for (int t = 0; t < 300; t++) {
        int ok = 0;
        for (int i = 0; i < e->n; i++)
            ok += healthy(e->client[i]);
        if (ok == e->n)
            return 0;
        for (int i = 0; i < e->n; i++) {
            int st;
            if (e->pids[i] > 0 && waitpid(e->pids[i], &st, WNOHANG) == e->pids[i]) {
                e->pids[i] = -1;
                fprintf(stderr, "flotilla up: etcd member m%d exited; see %s/m%d.log\n", i, e->dir, i);
                return -1;
            }
        }
        struct timespec ts = {0, 100 * 1000000L};
        int sig = sigtimedwait(sigs, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            fprintf(stderr, "flotilla up: stopped\n");
            return -1;
        }
    }
    fprintf(stderr, "flotilla up: the etcd cluster on %s was not healthy within 30 s; see %s/m*.log\n", e->endpoints,
            e->dir);
    return -1;
}

void fl_up_etcd_close(fl_up_etcd *e)
{
    for (int i = 0; i < e->n; i++)
        if (e->pids && e->pids[i] > 0)
            kill(e->pids[i], SIGTERM);
    for (int i = 0; i < e->n; i++) {
        if (!e->pids || e->pids[i] <= 0)
            continue;
        int st;
        for (int t = 0; t < 100 && waitpid(e->pids[i], &st, WNOHANG) == 0; t++) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (waitpid(e->pids[i], &st, WNOHANG) == 0) {
            kill(e->pids[i], SIGKILL);
            waitpid(e->pids[i], &st, 0);
        }
    }
    free(e->client);
    free(e->peer);
    free(e->pids);
    free(e->dir);
    free(e->endpoints);
    memset(e, 0, sizeof *e);
}

int fl_up_share_pki(const char *from, const char *to)
{
    char *src = fl_asprintf("%s/pki", from), *dst = fl_asprintf("%s/pki", to);
    int rc = 0;
    if ((mkdir(to, 0700) != 0 && errno != EEXIST) || (mkdir(dst, 0700) != 0 && errno != EEXIST)) {
        fprintf(stderr, "flotilla up: cannot create %s: %s\n", dst, strerror(errno));
        rc = 1;
    }
    DIR *d = rc ? NULL : opendir(src);
    if (!rc && !d) {
        fprintf(stderr, "flotilla up: cannot read %s: %s\n", src, strerror(errno));
        rc = 1;
    }
    for (struct dirent *de; d && !rc && (de = readdir(d));) {
        if (de->d_name[0] == '.')
            continue;
        char *a = fl_asprintf("%s/%s", src, de->d_name), *b = fl_asprintf("%s/%s", dst, de->d_name);
        char *data = NULL;
        size_t len = 0;
        struct stat st;
        if (stat(b, &st) != 0 && stat(a, &st) == 0 && S_ISREG(st.st_mode)) {
            if (fl_read_file(a, 1 << 20, &data, &len) != 0 || fl_write_file_atomic(b, data, len, 0600) != 0) {
                fprintf(stderr, "flotilla up: cannot copy %s to %s\n", a, b);
                rc = 1;
            }
        }
        if (data)
            explicit_bzero(data, len); /* keys and tokens */
        free(data);
        free(a);
        free(b);
    }
    if (d)
        closedir(d);
    free(src);
    free(dst);
    return rc;
}

int fl_up_write_replica_kubeconfigs(const char *dir, int n)
{
    fl_kubeconfig *kcs = fl_calloc((size_t)n, sizeof *kcs);
    fl_kubeconfig_spec *specs = fl_calloc((size_t)n, sizeof *specs);
    char **names = fl_calloc((size_t)n, sizeof *names);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char *path = fl_asprintf("%s/replica-%d/kubeconfig", dir, i + 1), *err = NULL;
        if (fl_kubeconfig_load(path, NULL, &kcs[i], &err) != 0) {
            fprintf(stderr, "flotilla up: %s\n", err ? err : path);
            rc = 1;
        }
        free(err);
        free(path);
        names[i] = fl_asprintf("replica-%d", i + 1);
        specs[i] = (fl_kubeconfig_spec){.server = kcs[i].server, .ca_pem = kcs[i].ca_pem, .user = "admin",
                                        .token = kcs[i].token, .cluster = names[i], .context = names[i]};
    }
    size_t len = 0;
    char *text = rc ? NULL : fl_kubeconfig_format_many(specs, (size_t)n, &len);
    char *out = fl_asprintf("%s/kubeconfig", dir);
    if (!rc && (!text || fl_write_file_atomic(out, text, len, 0600) != 0)) {
        fprintf(stderr, "flotilla up: cannot write %s\n", out);
        rc = 1;
    }
    if (text)
        explicit_bzero(text, len);
    free(text);
    free(out);
    /* the agents register through replica 1's bootstrap identity, the same on every replica */
    char *bs = fl_asprintf("%s/replica-1/bootstrap-kubeconfig", dir), *bd = fl_asprintf("%s/bootstrap-kubeconfig", dir);
    char *data = NULL;
    len = 0;
    if (!rc && (fl_read_file(bs, 1 << 20, &data, &len) != 0 || fl_write_file_atomic(bd, data, len, 0600) != 0)) {
        fprintf(stderr, "flotilla up: cannot copy %s to %s\n", bs, bd);
        rc = 1;
    }
    if (data)
        explicit_bzero(data, len);
    free(data);
    free(bs);
    free(bd);
    for (int i = 0; i < n; i++) {
        fl_kubeconfig_close(&kcs[i]);
        free(names[i]);
    }
    free(kcs);
    free(specs);
    free(names);
    return rc;
}
