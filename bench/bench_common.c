/* bench_common.c - the server child process, HTTP client setup, timing and statistics
 * shared by the benchmarks (see bench_common.h). */
#include "bench_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t fb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void fb_sleep_until(int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / 1000000000LL, .tv_nsec = deadline_ns % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

const char *fb_flotilla_path(const char *arg)
{
    static char path[PATH_MAX];
    if (arg)
        return arg;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return "build/flotilla";
    exe[n] = 0;
    snprintf(path, sizeof path, "%s/../flotilla", dirname(exe));
    return path;
}

char *fb_mkdtemp(const char *parent, const char *prefix)
{
    if (!parent)
        parent = getenv("TMPDIR");
    if (!parent || !*parent)
        parent = "/tmp";
    size_t n = strlen(parent) + strlen(prefix) + 16;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s-XXXXXX", parent, prefix);
    if (!mkdtemp(p)) {
        fprintf(stderr, "mkdtemp %s: %s\n", p, strerror(errno));
        exit(1);
    }
    return p;
}

long fb_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    return (long)rl.rlim_cur;
}

/* Read a whole small file into a malloc'd string, or NULL. */
char *fb_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    size_t r;
    while (p && (r = fread(p + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 >= cap) {
            cap *= 2;
            p = realloc(p, cap);
        }
    }
    fclose(f);
    if (p)
        p[n] = 0;
    return p;
}

static void print_log_tail(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/server.log", dir);
    char *log = fb_slurp(path);
    if (!log)
        return;
    size_t n = strlen(log);
    fprintf(stderr, "--- last lines of %s ---\n%s\n---\n", path, n > 2000 ? log + n - 2000 : log);
    free(log);
}

static void describe_exit(const fb_server *s, int status)
{
    if (WIFSIGNALED(status))
        fprintf(stderr, "SERVER PROBLEM: flotilla server (pid %d) was killed by signal %d (%s)\n", (int)s->pid,
                WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        fprintf(stderr, "SERVER PROBLEM: flotilla server (pid %d) exited with status %d\n", (int)s->pid,
                WEXITSTATUS(status));
    print_log_tail(s->dir);
}

bool fb_server_alive(fb_server *s)
{
    if (s->pid <= 0)
        return false;
    int status;
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r == 0)
        return true;
    if (r == s->pid)
        describe_exit(s, status);
    s->pid = -1;
    return false;
}

int fb_server_start(const char *flotilla, const char *dir, const char *const *extra, fb_server *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    const char *argv[32];
    int argc = 0;
    argv[argc++] = flotilla;
    argv[argc++] = "server";
    argv[argc++] = "--data-dir";
    argv[argc++] = dir;
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1:0";
    for (int i = 0; extra && extra[i] && argc < 30; i++) {
        if (!strcmp(extra[i], "--insecure-http"))
            s->insecure = true;
        argv[argc++] = extra[i];
    }
    argv[argc] = NULL;

    char logpath[600];
    snprintf(logpath, sizeof logpath, "%s/server.log", dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "mkdir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(flotilla, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", flotilla, strerror(errno));
        _exit(127);
    }
    s->pid = pid;

    /* the server prints "flotilla server listening on URL" once it serves */
    int64_t deadline = fb_now_ns() + 30LL * 1000000000LL;
    while (fb_now_ns() < deadline) {
        if (!fb_server_alive(s))
            return -1;
        char *log = fb_slurp(logpath);
        const char *m = log ? strstr(log, "listening on ") : NULL;
        if (m) {
            m += strlen("listening on ");
            size_t n = strcspn(m, " \r\n");
            if (n < sizeof s->url && m[n] == '\n') {
                memcpy(s->url, m, n);
                s->url[n] = 0;
            }
        }
        free(log);
        if (s->url[0])
            break;
        usleep(20000);
    }
    if (!s->url[0]) {
        fprintf(stderr, "flotilla server did not start within 30 s\n");
        print_log_tail(dir);
        fb_server_stop(s);
        return -1;
    }
    if (!s->insecure) {
        snprintf(s->ca, sizeof s->ca, "%s/pki/ca.crt", dir);
        char tpath[600];
        snprintf(tpath, sizeof tpath, "%s/pki/admin.token", dir);
        char *tok = fb_slurp(tpath);
        if (!tok) {
            fprintf(stderr, "cannot read %s\n", tpath);
            fb_server_stop(s);
            return -1;
        }
        tok[strcspn(tok, " \r\n")] = 0;
        snprintf(s->auth, sizeof s->auth, "Authorization: Bearer %s", tok);
        free(tok);
    }
    /* and answers /healthz */
    struct curl_slist *h = fb_headers(s);
    CURL *c = fb_curl_new(s, h);
    fb_buf b = {0};
    long code = 0;
    while (fb_now_ns() < deadline && (code = fb_request(c, s, "GET", "/healthz", NULL, 0, &b)) != 200)
        usleep(20000);
    free(b.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (code != 200) {
        fprintf(stderr, "flotilla server at %s does not answer /healthz\n", s->url);
        fb_server_stop(s);
        return -1;
    }
    return 0;
}

int fb_server_stop(fb_server *s)
{
    if (s->pid <= 0)
        return -1;
    int status = 0;
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r == s->pid) {
        describe_exit(s, status);
        s->pid = -1;
        return -1;
    }
    kill(s->pid, SIGTERM);
    int64_t deadline = fb_now_ns() + 15LL * 1000000000LL;
    while ((r = waitpid(s->pid, &status, WNOHANG)) == 0 && fb_now_ns() < deadline)
        usleep(20000);
    if (r == 0) {
        fprintf(stderr, "SERVER PROBLEM: flotilla server (pid %d) did not stop within 15 s of SIGTERM; killing\n",
                (int)s->pid);
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
    } else if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) {
        describe_exit(s, status);
    }
    s->pid = -1;
    return status;
}

/* The number after "field:" in the text of a /proc status file, or -1. */
static long status_field(const char *st, const char *field)
{
    size_t fl = strlen(field);
    for (const char *line = st; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, field, fl) && line[fl] == ':')
            return strtol(line + fl + 1, NULL, 10);
    return -1;
}

long fb_proc_kib(pid_t pid, const char *field)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *st = fb_slurp(path);
    if (!st)
        return -1;
    long v = status_field(st, field);
    free(st);
    return v;
}

long fb_proc_ctxsw(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char tpath[300];
        snprintf(tpath, sizeof tpath, "/proc/%d/task/%s/status", (int)pid, e->d_name);
        char *st = fb_slurp(tpath);
        if (!st)
            continue; /* the thread ended meanwhile */
        long v = status_field(st, "voluntary_ctxt_switches"), nv = status_field(st, "nonvoluntary_ctxt_switches");
        total += (v > 0 ? v : 0) + (nv > 0 ? nv : 0);
        free(st);
    }
    closedir(d);
    return total;
}

double fb_proc_cpu_s(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *st = fb_slurp(path);
    if (!st)
        return -1;
    /* fields after the ")" closing the command name: state is field 3, utime 14, stime 15 */
    char *p = strrchr(st, ')');
    double v = -1;
    if (p) {
        unsigned long long ut = 0, stime = 0;
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stime) == 2)
            v = (double)(ut + stime) / (double)sysconf(_SC_CLK_TCK);
    }
    free(st);
    return v;
}

double fb_thread_cpu_s(pthread_t t)
{
    clockid_t cid;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &cid) != 0 || clock_gettime(cid, &ts) != 0)
        return -1;
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double fb_metric(const fb_server *s, const char *name)
{
    struct curl_slist *h = fb_headers(s);
    CURL *c = fb_curl_new(s, h);
    fb_buf b = {0};
    double v = -1;
    if (fb_request(c, s, "GET", "/metrics", NULL, 0, &b) == 200) {
        size_t nl = strlen(name);
        for (char *line = b.p; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            if (!strncmp(line, name, nl) && (line[nl] == ' ' || line[nl] == '{')) {
                char *sp = strchr(line, ' ');
                if (sp)
                    v = strtod(sp + 1, NULL);
                break;
            }
        }
    }
    free(b.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return v;
}

struct curl_slist *fb_headers(const fb_server *s)
{
    struct curl_slist *h = NULL;
    if (s->auth[0])
        h = curl_slist_append(h, s->auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip on bodies */
    return h;
}

CURL *fb_curl_new(const fb_server *s, struct curl_slist *headers)
{
    CURL *c = curl_easy_init();
    if (!c)
        abort();
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    if (s->ca[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, s->ca);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fb_buf_write);
    return c;
}

size_t fb_buf_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    fb_buf *b = userdata;
    size_t n = size * nmemb;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            abort();
        b->cap = cap;
    }
    memcpy(b->p + b->n, ptr, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

long fb_request(CURL *c, const fb_server *s, const char *method, const char *path, const char *body,
                size_t body_len, fb_buf *out)
{
    char url[1024];
    snprintf(url, sizeof url, "%s%s", s->url, path);
    out->n = 0;
    if (out->p)
        out->p[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (!strcmp(method, "GET")) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
        if (strcmp(method, "POST"))
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode rc = curl_easy_perform(c);
    if (!strcmp(method, "GET"))
        ; /* HTTPGET already cleared the custom request */
    else
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
    if (rc != CURLE_OK) {
        fb_buf_write((char *)curl_easy_strerror(rc), 1, strlen(curl_easy_strerror(rc)), out);
        return 0;
    }
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

long long fb_json_rv(const char *json)
{
    const char *k = json ? strstr(json, "\"resourceVersion\":\"") : NULL;
    if (!k)
        return -1;
    return strtoll(k + strlen("\"resourceVersion\":\""), NULL, 10);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

double fb_pct_sorted_ms(const int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    /* nearest-rank: the smallest value with at least p% of samples at or below it */
    size_t rank = (size_t)((p / 100.0) * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return (double)v[rank - 1] / 1e6;
}

double fb_pct_ms(int64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_i64);
    return fb_pct_sorted_ms(v, n, p);
}

int fb_parse_list(const char *s, int *out, int max)
{
    int n = 0;
    while (s && *s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* ---- member hosts and their credentials (members_scale, propagation) ---- */

char *fb_b64(const char *s, size_t n)
{
    static const char tb[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1), *p = o;
    if (!o)
        abort();
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)(unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)(unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)s[i + 2];
        *p++ = tb[(v >> 18) & 63];
        *p++ = tb[(v >> 12) & 63];
        *p++ = i + 1 < n ? tb[(v >> 6) & 63] : '=';
        *p++ = i + 2 < n ? tb[v & 63] : '=';
    }
    *p = 0;
    return o;
}

/* The bearer token in a kubeconfig file (heap), or NULL. */
char *fb_kubeconfig_token(const char *path)
{
    char *kc = fb_slurp(path);
    const char *t = kc ? strstr(kc, "token: ") : NULL;
    char *out = NULL;
    if (t) {
        t += 7;
        if (*t == '"')
            t++;
        out = strndup(t, strcspn(t, "\"\r\n"));
    }
    free(kc);
    return out;
}

int fb_member_start(const char *flotilla, const char *dir, int clusters, fb_member_host *m)
{
    memset(m, 0, sizeof *m);
    mkdir(dir, 0700);
    char n[16], logpath[600];
    snprintf(n, sizeof n, "%d", clusters);
    snprintf(logpath, sizeof logpath, "%s/member.log", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(flotilla, flotilla, "member", "--data-dir", dir, "--clusters", n, (char *)NULL);
        _exit(127);
    }
    m->pid = pid;
    /* it prints "... at https://HOST:PORT/clusters/member1" once it serves */
    for (int64_t deadline = fb_now_ns() + 120 * 1000000000LL; fb_now_ns() < deadline;) {
        char *log = fb_slurp(logpath);
        const char *at = log ? strstr(log, " at ") : NULL;
        const char *end = at ? strstr(at, "/clusters/") : NULL;
        if (at && end && (size_t)(end - at - 4) < sizeof m->url) {
            memcpy(m->url, at + 4, (size_t)(end - at - 4));
            m->url[end - at - 4] = 0;
            free(log);
            return 0;
        }
        free(log);
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "SERVER PROBLEM: flotilla member exited during start-up\n");
            m->pid = 0;
            return -1;
        }
        usleep(50000);
    }
    fprintf(stderr, "flotilla member did not start in 120 s\n");
    return -1;
}

void fb_member_stop(fb_member_host *m)
{
    if (m->pid <= 0)
        return;
    kill(m->pid, SIGTERM);
    int st;
    int64_t deadline = fb_now_ns() + 15 * 1000000000LL;
    while (waitpid(m->pid, &st, WNOHANG) == 0) {
        if (fb_now_ns() > deadline) {
            fprintf(stderr, "flotilla member did not stop within 15 s of SIGTERM; killing\n");
            kill(m->pid, SIGKILL);
            waitpid(m->pid, &st, 0);
            break;
        }
        usleep(20000);
    }
    m->pid = 0;
}

/* ---- joining members ---- */

int fb_join(const char *flotilla, CURL *c, const fb_server *s, const fb_member_host *mh, const char *members_dir, int clusters, bool pull,
            const char *logdir, pid_t **agents)
{
    int problems = 0;
    *agents = NULL;
    fb_buf out = {0};
    if (pull) {
        *agents = calloc((size_t)clusters, sizeof **agents);
        for (int i = 1; i <= clusters; i++) {
            char kc[700], bkc[700], name[32], logp[700];
            snprintf(kc, sizeof kc, "%s/member%d.kubeconfig", members_dir, i);
            snprintf(bkc, sizeof bkc, "%s/bootstrap-kubeconfig", s->dir);
            snprintf(name, sizeof name, "member%d", i);
            snprintf(logp, sizeof logp, "%s/agent-%d.log", logdir, i);
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (fd >= 0) {
                    dup2(fd, 1);
                    dup2(fd, 2);
                }
                execl(flotilla, flotilla, "agent", "--server-kubeconfig", bkc,
                      "--member-kubeconfig", kc, "--cluster-name", name, (char *)NULL);
                _exit(127);
            }
            (*agents)[i - 1] = pid;
        }
        return 0;
    }
    char ca_path[700];
    snprintf(ca_path, sizeof ca_path, "%s/pki/ca.crt", members_dir);
    char *ca = fb_slurp(ca_path);
    char *ca64 = ca ? fb_b64(ca, strlen(ca)) : strdup("");
    const char *ns = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"karmada-cluster\"}}";
    fb_request(c, s, "POST", "/api/v1/namespaces", ns, strlen(ns), &out);
    for (int i = 1; i <= clusters; i++) {
        char kc[700], body[8192];
        snprintf(kc, sizeof kc, "%s/member%d.kubeconfig", members_dir, i);
        char *tok = fb_kubeconfig_token(kc);
        char *tok64 = tok ? fb_b64(tok, strlen(tok)) : strdup("");
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"member%d\",\"namespace\":"
                 "\"karmada-cluster\"},\"data\":{\"token\":\"%s\",\"caBundle\":\"%s\"}}",
                 i, tok64, ca64);
        long code = fb_request(c, s, "POST", "/api/v1/namespaces/karmada-cluster/secrets", body, strlen(body), &out);
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":"
                 "\"member%d\"},\"spec\":{\"syncMode\":\"Push\",\"apiEndpoint\":\"%s/clusters/member%d\","
                 "\"secretRef\":{\"namespace\":\"karmada-cluster\",\"name\":\"member%d\"}}}",
                 i, mh->url, i, i);
        long code2 = fb_request(c, s, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", body, strlen(body), &out);
        if (code != 201 || code2 != 201) {
            fprintf(stderr, "SERVER PROBLEM: join member%d: HTTP %ld/%ld %.200s\n", i, code, code2, out.p);
            problems++;
        }
        free(tok);
        free(tok64);
    }
    free(ca);
    free(ca64);
    free(out.p);
    return problems;
}

void fb_agents_stop(pid_t *agents, int n)
{
    for (int i = 0; agents && i < n; i++) {
        kill(agents[i], SIGTERM);
        waitpid(agents[i], NULL, 0);
    }
    free(agents);
}

int fb_wait_ready(CURL *c, const fb_server *s, int clusters, int timeout_s)
{
    fb_buf out = {0};
    int ready = 0;
    int64_t deadline = fb_now_ns() + (int64_t)timeout_s * 1000000000LL;
    for (;;) {
        ready = -1;
        if (fb_request(c, s, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters", NULL, 0, &out) == 200) {
            ready = 0;
            for (const char *p = out.p; (p = strstr(p, "\"type\":\"Ready\",\"status\":\"True\"")); p++)
                ready++;
        }
        if (ready >= clusters || fb_now_ns() >= deadline)
            break;
        usleep(200000);
    }
    free(out.p);
    return ready;
}

void fb_scratch_done(const char *dir, bool keep)
{
    if (keep) {
        printf("data kept in %s\n", dir);
        return;
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

fb_reqsnap fb_snap_requests(const fb_server *srv)
{
    fb_reqsnap s = {0};
    struct curl_slist *h = fb_headers(srv);
    CURL *c = fb_curl_new(srv, h);
    fb_buf b = {0};
    if (fb_request(c, srv, "GET", "/metrics", NULL, 0, &b) != 200)
        goto out;
    const char *pre = "flotilla_apiserver_request_total{";
    for (const char *line = b.p; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, pre, strlen(pre)))
            continue;
        char verb[16], res[64], code[8];
        if (sscanf(line + strlen(pre), "verb=\"%15[^\"]\",resource=\"%63[^\"]\",code=\"%7[^\"]\"", verb, res, code) != 3)
            continue;
        if (!strcmp(verb, "GET") || !strcmp(verb, "LIST") || !strcmp(verb, "WATCH"))
            continue;
        s.e = realloc(s.e, (size_t)(s.n + 1) * sizeof *s.e);
        if (!s.e)
            abort();
        snprintf(s.e[s.n].key, sizeof s.e[s.n].key, "%s %s %s", verb, res, code);
        s.e[s.n].v = strtod(strchr(line, '}') + 1, NULL);
        s.n++;
    }
out:
    free(b.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return s;
}

static int cmp_req_desc(const void *a, const void *b)
{
    double x = ((const fb_reqcount *)a)->v, y = ((const fb_reqcount *)b)->v;
    return (x < y) - (x > y);
}

void fb_print_writes(const fb_reqsnap *before, const fb_reqsnap *after, double per, const char *unit)
{
    fb_reqcount *d = calloc((size_t)after->n + 1, sizeof *d);
    int nd = 0;
    double total = 0;
    for (int i = 0; i < after->n; i++) {
        double v = after->e[i].v;
        for (int j = 0; j < before->n; j++)
            if (!strcmp(before->e[j].key, after->e[i].key))
                v -= before->e[j].v;
        if (v > 0) {
            d[nd] = after->e[i];
            d[nd++].v = v;
            total += v;
        }
    }
    qsort(d, (size_t)nd, sizeof *d, cmp_req_desc);
    printf("  writes to the control plane: %.0f (%.1f per %s):", total, total / per, unit);
    for (int i = 0; i < nd; i++)
        printf("%s %s %.0f (%.2f)", i ? ";" : "", d[i].key, d[i].v, d[i].v / per);
    printf("\n");
    free(d);
}

void fb_snap_free(fb_reqsnap *s)
{
    free(s->e);
    s->e = NULL;
    s->n = 0;
}

void fb_bprintf(fb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + (size_t)n + 1)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            abort();
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void fb_breset(fb_buf *b)
{
    b->n = 0;
    if (b->p)
        b->p[0] = 0;
}

double fb_since_s(int64_t t0)
{
    return (double)(fb_now_ns() - t0) / 1e9;
}

/* ---- many creates on several connections ---- */

typedef struct creates {
    const fb_server *s;
    int n;
    fb_gen_fn gen;
    void *ctx;
    int64_t *ack;
    atomic_int next;
    atomic_long errors, retries;
} creates;

static void *creator_main(void *arg)
{
    creates *cr = arg;
    struct curl_slist *h = fb_headers(cr->s);
    CURL *c = fb_curl_new(cr->s, h);
    fb_buf body = {0}, out = {0};
    char path[256];
    for (int i; (i = atomic_fetch_add(&cr->next, 1)) < cr->n;) {
        fb_breset(&body);
        cr->gen(cr->ctx, i, path, sizeof path, &body);
        long code = 0;
        /* 429 (too many requests in flight) and transport errors are retried, a few times */
        for (int attempt = 0; attempt < 50; attempt++) {
            code = fb_request(c, cr->s, "POST", path, body.p, body.n, &out);
            if (code != 429 && code != 0)
                break;
            atomic_fetch_add(&cr->retries, 1);
            usleep(10000);
        }
        if (cr->ack)
            cr->ack[i] = fb_now_ns();
        if (code != 201 && atomic_fetch_add(&cr->errors, 1) < 5)
            fprintf(stderr, "SERVER PROBLEM: POST %s: HTTP %ld %.300s\n", path, code, out.p ? out.p : "");
    }
    free(body.p);
    free(out.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return NULL;
}

double fb_create_many(const fb_server *s, int conns, int n, fb_gen_fn gen, void *ctx, int64_t *ack, long *errors,
                      long *retries)
{
    creates cr = {.s = s, .n = n, .gen = gen, .ctx = ctx, .ack = ack};
    atomic_init(&cr.next, 0);
    atomic_init(&cr.errors, 0);
    atomic_init(&cr.retries, 0);
    pthread_t *t = calloc((size_t)(conns > 0 ? conns : 1), sizeof *t);
    if (!t)
        abort();
    int64_t t0 = fb_now_ns();
    int started = 0;
    for (int i = 0; i < conns; i++)
        if (pthread_create(&t[started], NULL, creator_main, &cr) == 0)
            started++;
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    double secs = fb_since_s(t0);
    free(t);
    if (errors)
        *errors = atomic_load(&cr.errors);
    if (retries)
        *retries = atomic_load(&cr.retries);
    return secs;
}

/* ---- watches ---- */

/* One complete event line: count ERRORs, note the resourceVersion, pass the rest on. */
static void watch_line(fb_watch *w, const char *line, int64_t now)
{
    const char *t = strstr(line, "\"type\":\"");
    if (!t)
        return;
    t += 8;
    int type = !strncmp(t, "ADDED\"", 6) ? 0 : !strncmp(t, "MODIFIED\"", 9) ? 1 : !strncmp(t, "DELETED\"", 8) ? 2 : -1;
    if (type < 0) {
        if (!strncmp(t, "ERROR\"", 6))
            atomic_fetch_add(&w->set->errors, 1);
        return;
    }
    long long rv = fb_json_rv(line);
    if (rv > w->rv)
        w->rv = rv;
    w->on_event(w, type, line, now);
}

static size_t watch_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    fb_watch *w = userdata;
    int64_t now = fb_now_ns();
    fb_buf_write(ptr, size, nmemb, &w->buf);
    char *line = w->buf.p, *nl;
    while ((nl = strchr(line, '\n'))) {
        *nl = 0;
        watch_line(w, line, now);
        line = nl + 1;
    }
    size_t rest = w->buf.n - (size_t)(line - w->buf.p);
    memmove(w->buf.p, line, rest);
    w->buf.n = rest;
    w->buf.p[rest] = 0;
    return size * nmemb;
}

/* (Re)point the handle at base, from the newest resourceVersion seen if any. */
static void watch_arm(fb_watch *w)
{
    char url[600];
    if (w->rv > 0)
        snprintf(url, sizeof url, "%s%sresourceVersion=%lld", w->base, strchr(w->base, '?') ? "&" : "?", w->rv);
    else
        snprintf(url, sizeof url, "%s", w->base);
    fb_breset(&w->buf);
    w->open = false;
    curl_easy_setopt(w->curl, CURLOPT_URL, url);
    curl_easy_setopt(w->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(w->curl, CURLOPT_TIMEOUT, 0L);
    curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, w);
}

void fb_watchset_init(fb_watchset *ws, int cap)
{
    memset(ws, 0, sizeof *ws);
    ws->cap = cap;
    ws->w = calloc((size_t)(cap > 0 ? cap : 1), sizeof *ws->w);
    if (!ws->w)
        abort();
    atomic_init(&ws->stop, false);
    atomic_init(&ws->open, 0);
    atomic_init(&ws->ends, 0);
    atomic_init(&ws->errors, 0);
}

fb_watch *fb_watchset_add(fb_watchset *ws, const fb_server *s, const char *path, fb_watch_fn on_event)
{
    if (ws->n == ws->cap || ws->started)
        abort();
    fb_watch *w = &ws->w[ws->n++];
    w->set = ws;
    w->on_event = on_event;
    w->headers = fb_headers(s);
    w->curl = fb_curl_new(s, w->headers);
    snprintf(w->base, sizeof w->base, "%s%s", s->url, path);
    watch_arm(w);
    return w;
}

/* The watcher thread: every watch on one curl multi handle. */
static void *watcher_main(void *arg)
{
    fb_watchset *ws = arg;
    CURLM *m = curl_multi_init();
    for (int i = 0; i < ws->n; i++)
        curl_multi_add_handle(m, ws->w[i].curl);
    while (!atomic_load(&ws->stop)) {
        int running = 0, left;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left))) {
            for (int i = 0; msg->msg == CURLMSG_DONE && i < ws->n; i++) {
                fb_watch *w = &ws->w[i];
                if (w->curl != msg->easy_handle)
                    continue;
                atomic_fetch_add(&ws->ends, 1);
                if (w->open)
                    atomic_fetch_sub(&ws->open, 1);
                curl_multi_remove_handle(m, w->curl);
                watch_arm(w);
                curl_multi_add_handle(m, w->curl);
            }
        }
        for (int i = 0; i < ws->n; i++) {
            fb_watch *w = &ws->w[i];
            long code = 0;
            if (!w->open && curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200) {
                w->open = true;
                atomic_fetch_add(&ws->open, 1);
            }
        }
        curl_multi_poll(m, NULL, 0, 20, NULL);
    }
    for (int i = 0; i < ws->n; i++)
        curl_multi_remove_handle(m, ws->w[i].curl);
    curl_multi_cleanup(m);
    return NULL;
}

int fb_watchset_start(fb_watchset *ws, int timeout_s)
{
    if (pthread_create(&ws->thread, NULL, watcher_main, ws) != 0)
        return -1;
    ws->started = true;
    int64_t deadline = fb_now_ns() + (int64_t)timeout_s * 1000000000LL;
    while (atomic_load(&ws->open) < ws->n && fb_now_ns() < deadline)
        usleep(10000);
    return atomic_load(&ws->open) < ws->n ? -1 : 0;
}

void fb_watchset_stop(fb_watchset *ws)
{
    if (!ws->started)
        return;
    atomic_store(&ws->stop, true);
    pthread_join(ws->thread, NULL);
    ws->started = false;
}

void fb_watchset_close(fb_watchset *ws)
{
    fb_watchset_stop(ws);
    for (int i = 0; i < ws->n; i++) {
        curl_easy_cleanup(ws->w[i].curl);
        curl_slist_free_all(ws->w[i].headers);
        free(ws->w[i].buf.p);
    }
    free(ws->w);
    ws->w = NULL;
    ws->n = 0;
}

/* ---- a local etcd cluster ---- */

/* A loopback port nobody listens on now (the kernel picks it; closed again at once). */
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

const char *fb_etcd_url(const fb_etcd *e, int i, char *buf, size_t bufsz)
{
    snprintf(buf, bufsz, "http://127.0.0.1:%d", e->client[i]);
    return buf;
}

/* Does the member answer GET /health with health true? */
static bool etcd_healthy(const fb_etcd *e, int i)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/health", e->client[i]);
    CURL *c = curl_easy_init();
    if (!c)
        abort();
    fb_buf b = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fb_buf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    bool ok = curl_easy_perform(c) == CURLE_OK && b.p && strstr(b.p, "\"health\":\"true\"");
    curl_easy_cleanup(c);
    free(b.p);
    return ok;
}

int fb_etcd_start(const char *dir, int n, fb_etcd *e)
{
    memset(e, 0, sizeof *e);
    if (n < 1 || n > FB_ETCD_MAX)
        return -1;
    e->n = n;
    snprintf(e->dir, sizeof e->dir, "%s", dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "mkdir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    const char *bin = getenv("FB_ETCD") ? getenv("FB_ETCD") : "/usr/bin/etcd";
    char cluster[600] = "";
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        e->client[i] = free_port();
        e->peer[i] = free_port();
        off += (size_t)snprintf(cluster + off, sizeof cluster - off, "%sm%d=http://127.0.0.1:%d", i ? "," : "", i,
                                e->peer[i]);
        size_t eo = strlen(e->endpoints);
        snprintf(e->endpoints + eo, sizeof e->endpoints - eo, "%shttp://127.0.0.1:%d", i ? "," : "", e->client[i]);
    }
    pid_t parent = getpid();
    for (int i = 0; i < n; i++) {
        char name[16], data[600], curl_[64], purl[64], logp[600];
        snprintf(name, sizeof name, "m%d", i);
        snprintf(data, sizeof data, "%s/m%d", dir, i);
        snprintf(curl_, sizeof curl_, "http://127.0.0.1:%d", e->client[i]);
        snprintf(purl, sizeof purl, "http://127.0.0.1:%d", e->peer[i]);
        snprintf(logp, sizeof logp, "%s/m%d.log", dir, i);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            fb_etcd_stop(e);
            return -1;
        }
        if (pid == 0) {
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
                _exit(127);
            int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
            execl(bin, bin, "--name", name, "--data-dir", data, "--listen-client-urls", curl_,
                  "--advertise-client-urls", curl_, "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                  "--initial-cluster", cluster, "--initial-cluster-token", "flotilla-bench", "--initial-cluster-state",
                  "new", "--log-level", "warn", "--logger", "zap", (char *)NULL);
            fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
            _exit(127);
        }
        e->pid[i] = pid;
    }
    for (int64_t deadline = fb_now_ns() + 30 * 1000000000LL; fb_now_ns() < deadline;) {
        int ok = 0;
        for (int i = 0; i < n; i++) {
            int st;
            if (e->pid[i] > 0 && waitpid(e->pid[i], &st, WNOHANG) == e->pid[i]) {
                e->pid[i] = 0;
                fprintf(stderr, "etcd member m%d exited during start-up; see %s/m%d.log\n", i, dir, i);
                fb_etcd_stop(e);
                return -1;
            }
            ok += etcd_healthy(e, i);
        }
        if (ok == n)
            return 0;
        usleep(100000);
    }
    fprintf(stderr, "the etcd cluster on %s was not healthy within 30 s; see %s/m*.log\n", e->endpoints, dir);
    fb_etcd_stop(e);
    return -1;
}

void fb_etcd_stop(fb_etcd *e)
{
    for (int i = 0; i < e->n; i++) {
        int st;
        if (e->pid[i] > 0 && waitpid(e->pid[i], &st, WNOHANG) == e->pid[i]) {
            fprintf(stderr, "etcd member m%d had exited (status 0x%x); see %s/m%d.log\n", i, st, e->dir, i);
            e->pid[i] = 0;
        }
        if (e->pid[i] > 0)
            kill(e->pid[i], SIGTERM);
    }
    int64_t deadline = fb_now_ns() + 5 * 1000000000LL;
    for (int i = 0; i < e->n; i++) {
        if (e->pid[i] <= 0)
            continue;
        int st;
        while (waitpid(e->pid[i], &st, WNOHANG) == 0) {
            if (fb_now_ns() > deadline) {
                kill(e->pid[i], SIGKILL);
                waitpid(e->pid[i], &st, 0);
                break;
            }
            usleep(20000);
        }
        e->pid[i] = 0;
    }
}

int fb_share_pki(const char *from_dir, const char *to_dir)
{
    char src[600], dst[600];
    snprintf(src, sizeof src, "%s/pki", from_dir);
    snprintf(dst, sizeof dst, "%s/pki", to_dir);
    if ((mkdir(to_dir, 0700) != 0 && errno != EEXIST) || (mkdir(dst, 0700) != 0 && errno != EEXIST)) {
        fprintf(stderr, "mkdir %s: %s\n", dst, strerror(errno));
        return -1;
    }
    DIR *d = opendir(src);
    if (!d) {
        fprintf(stderr, "cannot read %s: %s\n", src, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char a[900], b[900];
        snprintf(a, sizeof a, "%s/%s", src, de->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, de->d_name);
        struct stat st;
        if (stat(a, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT | O_TRUNC, st.st_mode & 0777);
        char buf[8192];
        ssize_t r;
        while (in >= 0 && out >= 0 && (r = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)r) != r)
                rc = -1;
        if (in < 0 || out < 0)
            rc = -1;
        if (in >= 0)
            close(in);
        if (out >= 0)
            close(out);
        if (rc)
            fprintf(stderr, "cannot copy %s to %s\n", a, b);
    }
    closedir(d);
    return rc;
}

const char *fb_loadavg(char *buf, size_t bufsz)
{
    char *l = fb_slurp("/proc/loadavg");
    double a = 0, b = 0, c = 0;
    if (l)
        sscanf(l, "%lf %lf %lf", &a, &b, &c);
    free(l);
    snprintf(buf, bufsz, "load average 1/5/15 min: %.2f %.2f %.2f", a, b, c);
    return buf;
}
