/* members_scale.c - joining many simulated members, and delivering one Work to each.
 *
 *   members_scale [--clusters 1000] [--work 100,1000] [--pull] [--flotilla PATH] [--keep]
 *
 * Starts `flotilla server` and `flotilla member --clusters N` (HTTPS, tokens), then:
 *  1. join: for every member a Secret with its token and CA and a Push Cluster, as
 *     `flotilla ctl join` writes them — or, with --pull, a `flotilla agent` per member that
 *     registers it with the bootstrap token; time until every Cluster is Ready; server RSS after.
 *     Member RSS per cluster, against a member host with 1 cluster started in the same run.
 *  2. delivery: for K clusters at once, a Work with one ConfigMap in karmada-es-<name>;
 *     latency = the ConfigMap's event on a watch of that member (all opened before the
 *     first Work is written) - the Work's create acknowledged.
 * Targets (issue 3): P99 <= 100 ms at 100 clusters; server RSS <= 256 MiB with 1,000 joined. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"







/* One member's ConfigMap watch: the first event naming this round's ConfigMap sets its
 * latency. Events are newline-delimited; the needle is searched across the buffered tail. */
typedef struct watch_slot {
    CURL *curl;
    struct curl_slist *headers;
    fb_buf buf;
    char needle[96];
    int64_t *lat, *created;
    int *found;
} watch_slot;

static size_t watch_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    watch_slot *w = userdata;
    size_t n = size * nmemb;
    if (*w->lat)
        return n;
    fb_buf_write(ptr, size, nmemb, &w->buf);
    if (w->buf.p && strstr(w->buf.p, w->needle) && *w->created) {
        *w->lat = fb_now_ns() - *w->created;
        if (*w->lat <= 0)
            *w->lat = 1;
        (*w->found)++;
    }
    /* keep only the unfinished last line */
    char *nl = w->buf.p ? strrchr(w->buf.p, '\n') : NULL;
    if (nl) {
        size_t rest = w->buf.n - (size_t)(nl + 1 - w->buf.p);
        memmove(w->buf.p, nl + 1, rest);
        w->buf.n = rest;
        w->buf.p[rest] = 0;
    }
    return n;
}

/* What one GET /metrics costs: the median of 5 scrapes' wall time, the server's CPU per
 * scrape, and the bytes (issue 44: scrape time and size at 1,000 clusters). */
typedef struct scrape_cost {
    double ms, cpu_ms;
    size_t bytes;
} scrape_cost;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static scrape_cost measure_scrape(CURL *c, const fb_server *s, fb_buf *out)
{
    double t[5];
    scrape_cost r = {0};
    double cpu0 = fb_proc_cpu_s(s->pid);
    for (int i = 0; i < 5; i++) {
        int64_t t0 = fb_now_ns();
        if (fb_request(c, s, "GET", "/metrics", NULL, 0, out) != 200)
            fprintf(stderr, "SERVER PROBLEM: GET /metrics failed\n");
        t[i] = (double)(fb_now_ns() - t0) / 1e6;
        r.bytes = out->n;
    }
    r.cpu_ms = (fb_proc_cpu_s(s->pid) - cpu0) * 1000.0 / 5;
    qsort(t, 5, sizeof t[0], cmp_double);
    r.ms = t[2];
    return r;
}

int main(int argc, char **argv)
{
    int clusters = 1000, work[4] = {100, 1000}, nwork = 2;
    const char *flotilla_arg = NULL;
    bool keep = false, pull = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--clusters") && i + 1 < argc)
            clusters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--work") && i + 1 < argc)
            nwork = fb_parse_list(argv[++i], work, 4);
        else if (!strcmp(argv[i], "--flotilla") && i + 1 < argc)
            flotilla_arg = argv[++i];
        else if (!strcmp(argv[i], "--keep"))
            keep = true;
        else if (!strcmp(argv[i], "--pull"))
            pull = true;
        else {
            fprintf(stderr, "usage: members_scale [--clusters N] [--work 100,1000] [--pull] [--flotilla PATH] [--keep]\n");
            return 2;
        }
    }
    fb_raise_nofile();
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *root = fb_mkdtemp(NULL, "fl-bench-members");
    char sdir[600], m1dir[600], mndir[600];
    snprintf(sdir, sizeof sdir, "%s/server", root);
    snprintf(m1dir, sizeof m1dir, "%s/one", root);
    snprintf(mndir, sizeof mndir, "%s/members", root);
    int problems = 0;

    /* baseline: a member host with one cluster */
    fb_member_host one;
    if (fb_member_start(flotilla, m1dir, 1, &one))
        return 1;
    usleep(300000);
    long rss_one = fb_proc_kib(one.pid, "VmRSS");
    fb_member_stop(&one);

    fb_server s;
    if (fb_server_start(flotilla, sdir, NULL, &s))
        return 1;
    long rss_server_idle = fb_proc_kib(s.pid, "VmRSS");
    fb_member_host mh;
    int64_t t0 = fb_now_ns();
    if (fb_member_start(flotilla, mndir, clusters, &mh)) {
        fb_server_stop(&s);
        return 1;
    }
    double start_s = (fb_now_ns() - t0) / 1e9;
    usleep(300000);
    long rss_members = fb_proc_kib(mh.pid, "VmRSS");
    printf("member host: %d clusters started in %.2f s; RSS %.1f MiB (1 cluster: %.1f MiB) -> %.1f KiB per cluster\n",
           clusters, start_s, rss_members / 1024.0, rss_one / 1024.0,
           clusters > 1 ? (double)(rss_members - rss_one) / (clusters - 1) : 0.0);

    /* 1. join */
    struct curl_slist *h = fb_headers(&s);
    CURL *c = fb_curl_new(&s, h);
    fb_buf out = {0};
    scrape_cost scrape_idle = measure_scrape(c, &s, &out); /* the baseline: no cluster joined yet */
    char ca_path[700];
    snprintf(ca_path, sizeof ca_path, "%s/pki/ca.crt", mndir);
    int64_t j0 = fb_now_ns();
    pid_t *agents = NULL;
    problems += fb_join(flotilla, c, &s, &mh, mndir, clusters, pull, root, &agents);
    double written_s = (fb_now_ns() - j0) / 1e9;
    if (pull)
        printf("pull: %d agents started in %.2f s\n", clusters, written_s);
    int ready = fb_wait_ready(c, &s, clusters, problems ? 5 : 300);
    int64_t deadline;
    double join_s = (fb_now_ns() - j0) / 1e9;
    long rss_server = fb_proc_kib(s.pid, "VmRSS");
    if (pull) {
        long total = 0;
        for (int i = 0; i < clusters; i++)
            total += fb_proc_kib(agents[i], "VmRSS");
        printf("pull: agent RSS average %.1f MiB (target <= 16 MiB)\n", total / 1024.0 / clusters);
    }
    printf("join: %d Clusters + Secrets written in %.2f s; %d/%d Ready after %.2f s; server RSS %.1f MiB "
           "(idle before: %.1f MiB)\n",
           clusters, written_s, ready, clusters, join_s, rss_server / 1024.0, rss_server_idle / 1024.0);
    if (ready < clusters)
        problems++;

    /* 2. one Work to each of K clusters */
    for (int wi = 0; wi < nwork; wi++) {
        int k = work[wi] < clusters ? work[wi] : clusters;
        int64_t *created = calloc((size_t)k, sizeof *created), *lat = calloc((size_t)k, sizeof *lat);
        for (int i = 1; i <= k; i++) {
            char body[2048];
            snprintf(body, sizeof body,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"karmada-es-member%d\"}}", i);
            fb_request(c, &s, "POST", "/api/v1/namespaces", body, strlen(body), &out);
        }
        /* every member's ConfigMaps watched at once (curl multi): the ConfigMap's ADDED
         * event is the moment it exists in the member, to the event loop's resolution */
        int found = 0;
        deadline = fb_now_ns() + 120LL * 1000000000LL;
        watch_slot *ws = calloc((size_t)k, sizeof *ws);
        CURLM *multi = curl_multi_init();
        fb_server mem = {0};
        snprintf(mem.url, sizeof mem.url, "%s", mh.url);
        snprintf(mem.ca, sizeof mem.ca, "%s", ca_path);
        for (int i = 0; i < k; i++) {
            char kc[700], path[256];
            snprintf(kc, sizeof kc, "%s/member%d.kubeconfig", mndir, i + 1);
            char *tok = fb_kubeconfig_token(kc);
            snprintf(mem.auth, sizeof mem.auth, "Authorization: Bearer %s", tok ? tok : "");
            free(tok);
            ws[i].headers = fb_headers(&mem);
            ws[i].lat = &lat[i];
            ws[i].created = &created[i];
            ws[i].found = &found;
            snprintf(ws[i].needle, sizeof ws[i].needle, "\"name\":\"bench-%d-%d\"", wi, k);
            snprintf(path, sizeof path, "/clusters/member%d/api/v1/namespaces/default/configmaps?watch=1", i + 1);
            ws[i].curl = fb_curl_new(&mem, ws[i].headers);
            char url[600];
            snprintf(url, sizeof url, "%s%s", mem.url, path);
            curl_easy_setopt(ws[i].curl, CURLOPT_URL, url);
            curl_easy_setopt(ws[i].curl, CURLOPT_HTTPGET, 1L);
            curl_easy_setopt(ws[i].curl, CURLOPT_TIMEOUT, 0L);
            curl_easy_setopt(ws[i].curl, CURLOPT_WRITEFUNCTION, watch_write);
            curl_easy_setopt(ws[i].curl, CURLOPT_WRITEDATA, &ws[i]);
            curl_multi_add_handle(multi, ws[i].curl);
        }
        /* the watches are open (response headers in) before the first Work is written */
        for (int running = 1; running && fb_now_ns() < deadline;) {
            curl_multi_perform(multi, &running);
            int open = 0;
            for (int i = 0; i < k; i++) {
                long code = 0;
                curl_easy_getinfo(ws[i].curl, CURLINFO_RESPONSE_CODE, &code);
                open += code == 200;
            }
            if (open == k)
                break;
            curl_multi_poll(multi, NULL, 0, 10, NULL);
        }
        for (int i = 1; i <= k; i++) {
            char body[2048], path[256];
            snprintf(body, sizeof body,
                     "{\"apiVersion\":\"work.karmada.io/v1alpha1\",\"kind\":\"Work\",\"metadata\":{\"name\":\"bench-%d-%d\"},"
                     "\"spec\":{\"workload\":{\"manifests\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                     "{\"name\":\"bench-%d-%d\",\"namespace\":\"default\"},\"data\":{\"k\":\"v\"}}]}}}",
                     wi, k, wi, k);
            snprintf(path, sizeof path, "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member%d/works", i);
            int64_t sent = fb_now_ns();
            long code = fb_request(c, &s, "POST", path, body, strlen(body), &out);
            /* the write is acknowledged somewhere between t0 and now: take the middle */
            created[i - 1] = sent + (fb_now_ns() - sent) / 2;
            if (code != 201) {
                fprintf(stderr, "SERVER PROBLEM: Work for member%d: HTTP %ld\n", i, code);
                problems++;
            }
            /* drain events that arrived meanwhile, so their timestamps stay exact */
            int running = 0;
            curl_multi_perform(multi, &running);
        }
        for (int running = 1; found < k && running && fb_now_ns() < deadline;) {
            curl_multi_perform(multi, &running);
            curl_multi_poll(multi, NULL, 0, 5, NULL);
        }
        for (int i = 0; i < k; i++) {
            curl_multi_remove_handle(multi, ws[i].curl);
            curl_easy_cleanup(ws[i].curl);
            curl_slist_free_all(ws[i].headers);
            free(ws[i].buf.p);
        }
        curl_multi_cleanup(multi);
        free(ws);
        /* sort once before reading percentiles (printf's arguments have no order) */
        double p50 = fb_pct_ms(lat, (size_t)k, 50), p99 = fb_pct_sorted_ms(lat, (size_t)k, 99),
               pmax = fb_pct_sorted_ms(lat, (size_t)k, 100);
        printf("round %d, delivery to %d clusters%s: %d/%d present; P50 %.1f ms  P99 %.1f ms  max %.1f ms\n",
               wi + 1, k, wi ? "" : " (first Work per member: cold caches)", found, k, p50, p99, pmax);
        if (found < k)
            problems++;
        free(created);
        free(lat);
    }
    long rss_server_end = fb_proc_kib(s.pid, "VmRSS");
    scrape_cost scrape_full = measure_scrape(c, &s, &out);
    printf("GET /metrics (median of 5): %.1f ms, %.1f ms server CPU, %zu KiB with %d clusters joined and delivered to; "
           "%.1f ms, %.1f ms CPU, %zu KiB before the first joined (x%.1f the time)\n",
           scrape_full.ms, scrape_full.cpu_ms, scrape_full.bytes / 1024, clusters, scrape_idle.ms, scrape_idle.cpu_ms,
           scrape_idle.bytes / 1024, scrape_idle.ms > 0 ? scrape_full.ms / scrape_idle.ms : 0.0);
    printf("\nSummary\n| clusters | member RSS per cluster KiB | join to all Ready s | server RSS MiB (joined, after delivery) |\n"
           "|---|---|---|---|\n| %d | %.1f | %.2f | %.1f, %.1f |\n",
           clusters, clusters > 1 ? (double)(rss_members - rss_one) / (clusters - 1) : 0.0, join_s,
           rss_server / 1024.0, rss_server_end / 1024.0);
    printf("target server RSS <= 256 MiB with %d clusters joined: %.1f MiB -> %s (%.1f MiB once each member "
           "has a Work: member watches and their connections)\n",
           clusters, rss_server / 1024.0, rss_server <= 256 * 1024 ? "met" : "NOT met", rss_server_end / 1024.0);
    free(out.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    fb_agents_stop(agents, clusters);
    fb_member_stop(&mh);
    if (fb_server_stop(&s) != 0)
        problems++;
    fb_scratch_done(root, keep);
    free(root);
    return problems ? 1 : 0;
}
