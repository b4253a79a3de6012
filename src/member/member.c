/* member.c - the simulated member host (see member.h).
 *
 * One listener, one router: "/clusters/<name>/<path>" goes to cluster <name>'s API with
 * <path>, checked against that cluster's token; "/admin/..." is the host's own endpoint for
 * faults, checked against the host's admin token. Clusters are kept sorted by name and
 * found by binary search, so routing stays cheap with thousands of clusters. */
#include "member/member.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "api/http.h"
#include "api/kinds.h"
#include "api/tls.h"
#include "client/kubeconfig.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/random.h"

typedef struct vcluster {
    char *name;
    char token[65];
    fl_api api;
    volatile int down, slow_ms, partition;
} vcluster;

struct fl_member_host {
    fl_member_host_config cfg;
    vcluster *cl;
    size_t n;
    fl_http *http;
    fl_api admin_api;      /* answers /healthz etc. at the root; has no store */
    fl_sim *sim;
    fl_pki pki;
    char *url;
};

static void random_token(char out[65])
{
    unsigned char b[32];
    fl_random_bytes(b, sizeof b);
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const vcluster *)a)->name, ((const vcluster *)b)->name);
}

static vcluster *find(fl_member_host *h, const char *name, size_t len)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strncmp(h->cl[mid].name, name, len);
        if (c == 0 && h->cl[mid].name[len])
            c = 1;
        if (c == 0)
            return &h->cl[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* PUT /admin/clusters/<name>/fault {"down":bool,"slowMs":N,"partition":bool} */
static void admin_handle(void *ctx, fl_req *r)
{
    fl_member_host *h = ctx;
    const char *p = r->path + strlen("/admin/clusters/");
    const char *slash = strchr(p, '/');
    json_t *body = r->body ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
    int code = 404;
    const char *msg = "unknown admin path; use PUT /admin/clusters/<name>/fault";
    if (slash && !strcmp(slash, "/fault") && !strcmp(r->method, "PUT")) {
        char *name = fl_strndup(p, (size_t)(slash - p));
        json_t *slow = json_object_get(body, "slowMs");
        if (!json_is_object(body) || (slow && !json_is_integer(slow))) {
            code = 400;
            msg = "the body must be {\"down\":bool,\"slowMs\":int,\"partition\":bool}";
        } else if (fl_member_set_fault(h, name, json_is_true(json_object_get(body, "down")),
                                       (int)json_integer_value(slow),
                                       json_is_true(json_object_get(body, "partition"))) == 0) {
            code = 200;
            msg = "ok";
        } else {
            msg = "no such cluster";
        }
        free(name);
    }
    json_decref(body);
    r->code = code;
    r->resp = fl_asprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"%s\",\"message\":\"%s\",\"code\":%d}",
                          code == 200 ? "Success" : "Failure", msg, code);
    r->resp_len = strlen(r->resp);
    r->resp_type = "application/json";
}

/* GET /clusters/<name>/metrics: the cluster's kube-state-metrics series (sim_metrics.c) */
static void metrics_handle(void *ctx, fl_req *r)
{
    vcluster *v = ctx;
    if (strcmp(r->method, "GET")) {
        r->code = 405;
        r->resp = fl_strdup("only GET\n");
        r->resp_len = strlen(r->resp);
        r->resp_type = "text/plain";
        return;
    }
    r->code = 200;
    r->resp = fl_sim_metrics_text(&v->api, &r->resp_len);
    r->resp_type = "text/plain; version=0.0.4";
}

static int route(void *ctx, const char *url, fl_http_route *out)
{
    fl_member_host *h = ctx;
    if (!strncmp(url, "/admin/clusters/", 16)) {
        out->handle = admin_handle;
        out->handle_ctx = h;
        return 0; /* token: the host's admin token, already in out->token */
    }
    if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/livez") || !strcmp(url, "/version"))
        return 0; /* the host itself */
    if (strncmp(url, "/clusters/", 10))
        return -1;
    const char *name = url + 10;
    const char *slash = strchr(name, '/');
    size_t len = slash ? (size_t)(slash - name) : strlen(name);
    vcluster *v = find(h, name, len);
    if (!v)
        return -1;
    out->api = &v->api;
    out->path = slash ? slash : "/";
    if (!strncmp(out->path, "/metrics", 8) && (!out->path[8] || out->path[8] == '?')) {
        out->handle = metrics_handle;
        out->handle_ctx = v;
    }
    out->token = h->cfg.insecure_http ? NULL : v->token;
    out->fail_code = v->down ? 503 : 0;
    out->delay_ms = v->slow_ms;
    out->hold = v->partition ? &v->partition : NULL;
    return 0;
}

int fl_member_set_fault(fl_member_host *h, const char *name, bool down, int slow_ms, bool partition)
{
    vcluster *v = find(h, name, strlen(name));
    if (!v)
        return FL_ENOTFOUND;
    v->down = down;
    v->slow_ms = slow_ms > 0 ? slow_ms : 0;
    v->partition = partition;
    fl_log_kvf(FL_LOG_INFO, "member", FL_LOG_KV("cluster", name), "down=%d slowMs=%d partition=%d", down, v->slow_ms,
               partition);
    return 0;
}

const char *fl_member_host_url(const fl_member_host *h)
{
    return h->url;
}

int fl_member_host_start(const fl_member_host_config *cfg, fl_member_host **out, char **err)
{
    *out = NULL;
    if (cfg->clusters < 1 || !cfg->data_dir || !cfg->listen) {
        *err = fl_asprintf("a member host needs a data directory, an address and at least one cluster");
        return FL_EINVAL;
    }
    mkdir(cfg->data_dir, 0700);
    fl_member_host *h = fl_calloc(1, sizeof *h);
    h->cfg = *cfg;
    const char *prefix = cfg->name_prefix ? cfg->name_prefix : "member";
    int first = cfg->first_index > 0 ? cfg->first_index : 1;
    if (!cfg->insecure_http && fl_pki_ensure(cfg->data_dir, NULL, &h->pki, err) != 0) {
        free(h);
        return FL_EIO;
    }
    h->n = (size_t)cfg->clusters;
    h->cl = fl_calloc(h->n, sizeof *h->cl);
    for (size_t i = 0; i < h->n; i++) {
        vcluster *v = &h->cl[i];
        v->name = fl_asprintf("%s%d", prefix, first + (int)i);
        random_token(v->token);
        fl_store_config sc = {.memory = true, .ring_events = 256, .compact_window = 256};
        if (fl_store_open(&sc, &v->api.store) != 0) {
            *err = fl_asprintf("cannot create the store of %s", v->name);
            h->n = i;
            fl_member_host_stop(h);
            return FL_EIO;
        }
        v->api.kinds = fl_kindreg_new();
        v->api.bookmark_interval_ms = 60000;
        static const char *system_namespaces[] = {"default", "kube-system", "kube-public", "kube-node-lease", NULL};
        for (int j = 0; system_namespaces[j]; j++)
            fl_api_ensure_namespace(&v->api, system_namespaces[j]);
    }
    qsort(h->cl, h->n, sizeof *h->cl, cmp_name);

    fl_http_config hc = {.listen = cfg->listen,
                         .cert_pem = cfg->insecure_http ? NULL : h->pki.server_cert_pem,
                         .key_pem = cfg->insecure_http ? NULL : h->pki.server_key_pem,
                         .token = cfg->insecure_http ? NULL : h->pki.admin_token,
                         .router = route,
                         .router_ctx = h};
    int rc = fl_http_start(&hc, &h->admin_api, &h->http, err);
    if (rc) {
        fl_member_host_stop(h);
        return rc;
    }
    char host[128];
    snprintf(host, sizeof host, "%s", cfg->listen);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = 0;
    if (!host[0] || !strcmp(host, "0.0.0.0"))
        snprintf(host, sizeof host, "127.0.0.1");
    h->url = fl_asprintf("%s://%s:%d", cfg->insecure_http ? "http" : "https", host, fl_http_port(h->http));
    for (size_t i = 0; i < h->n; i++) {
        vcluster *v = &h->cl[i];
        char *server = fl_asprintf("%s/clusters/%s", h->url, v->name);
        char *path = fl_asprintf("%s/%s.kubeconfig", cfg->data_dir, v->name);
        if (fl_kubeconfig_write(path, server, cfg->insecure_http ? NULL : h->pki.ca_cert_pem,
                                cfg->insecure_http ? NULL : v->token) != 0)
            fl_log(FL_LOG_WARN, "member", "cannot write %s", path);
        free(path);
        free(server);
    }
    if (!cfg->insecure_http) {
        /* the host's own kubeconfig, for `flotilla ctl fault` */
        char *path = fl_asprintf("%s/admin.kubeconfig", cfg->data_dir);
        if (fl_kubeconfig_write(path, h->url, h->pki.ca_cert_pem, h->pki.admin_token) != 0)
            fl_log(FL_LOG_WARN, "member", "cannot write %s", path);
        free(path);
    }
    h->sim = fl_sim_new(&cfg->sim);
    for (size_t i = 0; i < h->n; i++)
        fl_sim_add_cluster(h->sim, h->cl[i].name, &h->cl[i].api);
    *out = h;
    return 0;
}

void fl_member_host_stop(fl_member_host *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        h->cl[i].api.stopping = 1;
    h->admin_api.stopping = 1;
    fl_http_stop(h->http);
    fl_sim_free(h->sim);
    for (size_t i = 0; i < h->n; i++) {
        fl_store_free(h->cl[i].api.store);
        fl_kindreg_free(h->cl[i].api.kinds);
        free(h->cl[i].name);
    }
    free(h->cl);
    fl_pki_close(&h->pki);
    free(h->url);
    free(h);
}
