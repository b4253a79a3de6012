/* test_webhook.c - the webhook interpreter backend (src/interp/webhook.c) against a real
 * HTTPS server running in this process.
 *
 * The server is a thread with OpenSSL listening on 127.0.0.1 with a certificate from a
 * throwaway PKI (fl_pki_ensure in a temporary directory); each connection gets its own
 * thread and is kept alive, so the tests can count TCP connections and TLS handshakes.
 * What it answers depends on the request path: /interpret behaves like a small but
 * complete interpreter for a CloneSet-like kind (every operation), the other paths each
 * script one way of failing (/slow, /http500, /garbage, /refuse, /baduid, ...), and
 * /by/<tag> answers InterpretStatus with {"by": "<tag>"} so ordering tests can see who
 * answered. The last request body is kept for checks on what the backend sends.
 *
 * Every call goes through an fl_interp registry the backend is attached to, as the
 * controllers will call it. Nothing leaves 127.0.0.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "api/tls.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "interp/interp.h"
#include "interp/webhook.h"
#include "testutil.h"

/* ---- JSON helpers ---- */

static json_t *J(const char *text)
{
    char *t = fl_strdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t e;
    json_t *v = json_loads(t, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON at %d: %s\n%s", e.position, e.text, t);
    free(t);
    return v;
}

static void assert_contains(const char *text, const char *words)
{
    if (!text)
        fail_msg("no message; wanted \"%s\"", words);
    if (!strstr(text, words))
        fail_msg("\"%s\" lacks \"%s\"", text, words);
}

static void assert_json(const json_t *got, const char *want)
{
    json_t *w = J(want);
    if (!fl_json_same(got, w)) {
        char *g = got ? fl_json_dumps(got, NULL) : fl_strdup("NULL");
        fail_msg("got  %s\nwant %s", g, want);
    }
    json_decref(w);
}

/* ---- the PKIs ---- */

static char *pki_dir[2];
static fl_pki pki[2]; /* [0] serves; [1] is a stranger's CA */

static void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                char *p = fl_asprintf("%s/%s", path, e->d_name);
                rm_rf(p);
                free(p);
            }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* caBundle text (base64 PEM) of pki i. Heap. */
static char *ca_bundle(int i)
{
    return fl_base64_encode(pki[i].ca_cert_pem, strlen(pki[i].ca_cert_pem));
}

/* ---- the server ---- */

struct server {
    int lfd, port;
    SSL_CTX *ctx;
    pthread_t th;
    atomic_bool stop;
    atomic_int accepts, handshakes, requests, live;
    pthread_mutex_t mu;
    json_t *last; /* last request body (mu) */
};

static struct server srv;

static void set_last(json_t *req)
{
    pthread_mutex_lock(&srv.mu);
    json_decref(srv.last);
    srv.last = json_incref(req);
    pthread_mutex_unlock(&srv.mu);
}

/* The last request body (new reference). */
static json_t *last_request(void)
{
    pthread_mutex_lock(&srv.mu);
    json_t *r = json_incref(srv.last);
    pthread_mutex_unlock(&srv.mu);
    return r;
}

/* A response context answering req with `fields` (single-quoted JSON object text) merged
 * into response, uid and successful set. */
static char *answer(const json_t *req, const char *fields)
{
    json_t *r = J(fields);
    const char *uid = json_string_value(json_object_get(json_object_get(req, "request"), "uid"));
    if (!json_object_get(r, "uid"))
        json_object_set_new(r, "uid", json_string(uid ? uid : ""));
    if (!json_object_get(r, "successful"))
        json_object_set_new(r, "successful", json_true());
    json_t *ctx = json_pack("{s:s, s:s, s:o}", "apiVersion", "config.karmada.io/v1alpha1", "kind",
                            "ResourceInterpreterContext", "response", r);
    char *s = fl_json_dumps(ctx, NULL);
    json_decref(ctx);
    return s;
}

/* The same with a JSON patch (text) as base64 in patch/patchType. */
static char *answer_patch(const json_t *req, const char *patch)
{
    json_t *p = J(patch);
    char *text = fl_json_dumps(p, NULL);
    char *b64 = fl_base64_encode(text, strlen(text));
    char *fields = fl_asprintf("{'patch': '%s', 'patchType': 'JSONPatch'}", b64);
    char *s = answer(req, fields);
    free(fields);
    free(b64);
    free(text);
    json_decref(p);
    return s;
}

static json_int_t jint(const json_t *o, const char *a, const char *b)
{
    return json_integer_value(json_object_get(json_object_get(o, a), b));
}

/* /interpret: a CloneSet interpreter. */
static char *interpret(const json_t *ctx)
{
    const json_t *req = json_object_get(ctx, "request");
    const json_t *obj = json_object_get(req, "object");
    const char *op = json_string_value(json_object_get(req, "operation"));
    char buf[512];
    if (!strcmp(op, "InterpretReplica")) {
        snprintf(buf, sizeof buf,
                 "{'replicas': %lld, 'replicaRequirements': {'resourceRequest': {'cpu': '0.5', 'memory': '1024Mi'},"
                 " 'nodeClaim': {'nodeSelector': {'disk': 'ssd'}}, 'namespace': 'web'}}",
                 (long long)jint(obj, "spec", "replicas"));
        return answer(ctx, buf);
    }
    if (!strcmp(op, "ReviseReplica")) {
        snprintf(buf, sizeof buf, "[{'op': 'replace', 'path': '/spec/replicas', 'value': %lld}]",
                 (long long)json_integer_value(json_object_get(req, "replicas")));
        return answer_patch(ctx, buf);
    }
    if (!strcmp(op, "Retain")) {
        const json_t *obs = json_object_get(req, "observedObject");
        json_t *paused = json_object_get(json_object_get(obs, "spec"), "paused");
        snprintf(buf, sizeof buf, "[{'op': 'add', 'path': '/spec/paused', 'value': %s}]",
                 json_is_true(paused) ? "true" : "false");
        return answer_patch(ctx, buf);
    }
    if (!strcmp(op, "InterpretStatus")) {
        snprintf(buf, sizeof buf, "{'rawStatus': {'readyReplicas': %lld}}",
                 (long long)jint(obj, "status", "readyReplicas"));
        return answer(ctx, buf);
    }
    if (!strcmp(op, "AggregateStatus")) {
        json_int_t sum = 0;
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(req, "aggregatedStatus"), i, it)
            sum += jint(it, "status", "readyReplicas");
        snprintf(buf, sizeof buf, "[{'op': 'add', 'path': '/status', 'value': {'readyReplicas': %lld}}]",
                 (long long)sum);
        return answer_patch(ctx, buf);
    }
    if (!strcmp(op, "InterpretHealth")) {
        bool ok = jint(obj, "status", "readyReplicas") >= jint(obj, "spec", "replicas");
        return answer(ctx, ok ? "{'healthy': true}" : "{'healthy': false}");
    }
    if (!strcmp(op, "InterpretComponent")) {
        snprintf(buf, sizeof buf,
                 "{'components': [{'name': 'worker', 'replicas': %lld, 'replicaRequirements': {'resourceRequest':"
                 " {'cpu': 0.5}, 'namespace': 'web'}}, {'name': 'leader', 'replicas': 1}]}",
                 (long long)jint(obj, "spec", "replicas"));
        return answer(ctx, buf);
    }
    if (!strcmp(op, "InterpretDependency"))
        return answer(ctx, "{'dependencies': [{'apiVersion': 'v1', 'kind': 'Secret', 'namespace': 'web', 'name': 'b'},"
                           " {'apiVersion': 'v1', 'kind': 'ConfigMap', 'namespace': 'web', 'name': 'z'},"
                           " {'apiVersion': 'v1', 'kind': 'Secret', 'namespace': 'web', 'name': 'b'},"
                           " {'apiVersion': 'v1', 'kind': 'ConfigMap', 'namespace': 'web',"
                           "  'labelSelector': {'matchLabels': {'app': 'web'}}}]}");
    return answer(ctx, "{'successful': false, 'status': {'message': 'unknown operation', 'code': 400}}");
}

/* What path answers to ctx: *status and the body (heap), or *delay_ms to sleep first. */
static char *route(const char *path, const json_t *ctx, int *status, int *delay_ms)
{
    *status = 200;
    *delay_ms = 0;
    if (!strcmp(path, "/interpret"))
        return interpret(ctx);
    if (!strncmp(path, "/by/", 4)) {
        char *fields = fl_asprintf("{'rawStatus': {'by': '%s'}, 'healthy': true}", path + 4);
        char *s = answer(ctx, fields);
        free(fields);
        return s;
    }
    if (!strcmp(path, "/slow")) {
        *delay_ms = 3000;
        return answer(ctx, "{'healthy': true}");
    }
    if (!strcmp(path, "/http500")) {
        *status = 500;
        return fl_strdup("boom\nthe webhook crashed");
    }
    if (!strcmp(path, "/garbage"))
        return fl_strdup("<html>not json</html>");
    if (!strcmp(path, "/noresponse"))
        return fl_strdup("{\"apiVersion\": \"config.karmada.io/v1alpha1\", \"kind\": \"ResourceInterpreterContext\"}");
    if (!strcmp(path, "/refuse"))
        return answer(ctx, "{'successful': false, 'status': {'message': 'replicas are secret', 'code': 403}}");
    if (!strcmp(path, "/nostatus"))
        return answer(ctx, "{'successful': false}");
    if (!strcmp(path, "/baduid"))
        return answer(ctx, "{'uid': 'not-the-request-uid', 'healthy': true}");
    if (!strcmp(path, "/empty"))
        return answer(ctx, "{}");
    if (!strcmp(path, "/badpatch"))
        return answer_patch(ctx, "[{'op': 'remove', 'path': '/spec/nothing/here'}]");
    if (!strcmp(path, "/badpatchtype"))
        return answer(ctx, "{'patch': 'W10=', 'patchType': 'MergePatch'}");
    if (!strcmp(path, "/notbase64"))
        return answer(ctx, "{'patch': '!!!', 'patchType': 'JSONPatch'}");
    if (!strcmp(path, "/badreplicas"))
        return answer(ctx, "{'replicas': -3}");
    if (!strcmp(path, "/baddeps"))
        return answer(ctx, "{'dependencies': [{'apiVersion': 'v1', 'kind': 'Secret'}]}");
    if (!strcmp(path, "/badcomponents"))
        return answer(ctx, "{'components': [{'name': 'a', 'replicas': 1}, {'name': 'a', 'replicas': 2}]}");
    if (!strcmp(path, "/badquantity"))
        return answer(ctx, "{'replicas': 1, 'replicaRequirements': {'resourceRequest': {'cpu': 'lots'}}}");
    if (!strcmp(path, "/big")) {
        char *s = fl_malloc(200001);
        memset(s, ' ', 200000);
        s[200000] = '\0';
        return s;
    }
    *status = 404;
    return fl_strdup("no such path");
}

#define BUFCAP (4 << 20) /* requests up to 4 MiB */

static bool ssl_write_all(SSL *ssl, const char *p, size_t n)
{
    while (n) {
        int w = SSL_write(ssl, p, (int)(n > 65536 ? 65536 : n));
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* One kept-alive connection: requests in, answers out, until the client closes. */
static void *conn_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    SSL *ssl = SSL_new(srv.ctx);
    char *buf = fl_malloc(BUFCAP);
    size_t len = 0;
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1)
        goto out;
    atomic_fetch_add(&srv.handshakes, 1);
    for (;;) {
        char *eoh;
        while (!(buf[len] = '\0', eoh = strstr(buf, "\r\n\r\n"))) {
            int r = len < BUFCAP - 1 ? SSL_read(ssl, buf + len, (int)(BUFCAP - 1 - len)) : 0;
            if (r <= 0)
                goto out;
            len += (size_t)r;
        }
        char method[16] = "", path[256] = "";
        sscanf(buf, "%15s %255s", method, path);
        size_t clen = 0;
        for (char *l = strstr(buf, "\r\n"); l && l < eoh; l = strstr(l + 2, "\r\n"))
            if (!strncasecmp(l + 2, "Content-Length:", 15))
                clen = strtoul(l + 17, NULL, 10);
        size_t hlen = (size_t)(eoh + 4 - buf);
        while (len < hlen + clen) {
            int r = SSL_read(ssl, buf + len, (int)(BUFCAP - 1 - len));
            if (r <= 0)
                goto out;
            len += (size_t)r;
        }
        json_t *ctx = json_loadb(buf + hlen, clen, 0, NULL);
        atomic_fetch_add(&srv.requests, 1);
        if (ctx)
            set_last(ctx);
        int status, delay;
        char *body = route(path, ctx, &status, &delay);
        json_decref(ctx);
        for (int slept = 0; slept < delay && !atomic_load(&srv.stop); slept += 20)
            sleep_ms(20);
        char *head = fl_asprintf("HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                                 status, strlen(body));
        bool ok = ssl_write_all(ssl, head, strlen(head)) && ssl_write_all(ssl, body, strlen(body));
        free(head);
        free(body);
        if (!ok)
            goto out;
        memmove(buf, buf + hlen + clen, len - hlen - clen);
        len -= hlen + clen;
    }
out:
    SSL_free(ssl);
    close(fd);
    free(buf);
    atomic_fetch_sub(&srv.live, 1);
    return NULL;
}

static void *accept_main(void *arg)
{
    while (!atomic_load(&srv.stop)) {
        struct pollfd p = {srv.lfd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(srv.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&srv.accepts, 1);
        atomic_fetch_add(&srv.live, 1);
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_create(&t, &a, conn_main, (void *)(intptr_t)fd);
        pthread_attr_destroy(&a);
    }
    return NULL;
}

/* A listening socket on 127.0.0.1 with a free port. */
static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 64), 0);
    getsockname(fd, (struct sockaddr *)&a, &alen);
    *port = ntohs(a.sin_port);
    return fd;
}

static int start_all(void **state)
{
    for (int i = 0; i < 2; i++) {
        char tmpl[] = "/tmp/fl-test-webhook-XXXXXX";
        char *e = NULL;
        pki_dir[i] = fl_strdup(mkdtemp(tmpl));
        if (fl_pki_ensure(pki_dir[i], NULL, &pki[i], &e))
            fail_msg("pki: %s", e);
    }
    srv.ctx = SSL_CTX_new(TLS_server_method());
    BIO *cb = BIO_new_mem_buf(pki[0].server_cert_pem, -1), *kb = BIO_new_mem_buf(pki[0].server_key_pem, -1);
    X509 *cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
    assert_int_equal(SSL_CTX_use_certificate(srv.ctx, cert), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(srv.ctx, key), 1);
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
    pthread_mutex_init(&srv.mu, NULL);
    srv.lfd = listen_any(&srv.port);
    pthread_create(&srv.th, NULL, accept_main, NULL);
    return 0;
}

static int stop_all(void **state)
{
    atomic_store(&srv.stop, true);
    pthread_join(srv.th, NULL);
    close(srv.lfd);
    /* connections end when their clients close them (every backend is freed by now) */
    for (int i = 0; i < 200 && atomic_load(&srv.live) > 0; i++)
        sleep_ms(20);
    SSL_CTX_free(srv.ctx);
    json_decref(srv.last);
    for (int i = 0; i < 2; i++) {
        fl_pki_close(&pki[i]);
        rm_rf(pki_dir[i]);
        free(pki_dir[i]);
    }
    return 0;
}

/* ---- configurations and objects ---- */

/* https://127.0.0.1:<port><path> of the test server (heap). */
static char *url_of(const char *path)
{
    return fl_asprintf("https://127.0.0.1:%d%s", srv.port, path);
}

/* A webhook object: name, url path (on the test server), rules JSON (single quotes),
 * timeoutSeconds (0: unset), CA (pki index, -1: none). */
static json_t *hook(const char *name, const char *path, const char *rules, int timeout, int ca)
{
    char *url = url_of(path);
    json_t *h = json_pack("{s:s, s:{s:s}, s:o, s:[s]}", "name", name, "clientConfig", "url", url, "rules", J(rules),
                          "interpreterContextVersions", "v1alpha1");
    if (timeout)
        json_object_set_new(h, "timeoutSeconds", json_integer(timeout));
    if (ca >= 0) {
        char *b = ca_bundle(ca);
        json_object_set_new(json_object_get(h, "clientConfig"), "caBundle", json_string(b));
        free(b);
    }
    free(url);
    return h;
}

/* A configuration of the given webhooks (references stolen), NULL-terminated. */
static json_t *config(const char *name, ...)
{
    json_t *hooks = json_array();
    va_list ap;
    va_start(ap, name);
    for (json_t *h; (h = va_arg(ap, json_t *));)
        json_array_append_new(hooks, h);
    va_end(ap);
    return json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "config.karmada.io/v1alpha1", "kind",
                     "ResourceInterpreterWebhookConfiguration", "metadata", "name", name, "webhooks", hooks);
}

#define CLONESET_ALL                                                                                                   \
    "[{'operations': ['*'], 'apiGroups': ['apps.kruise.io'], 'apiVersions': ['v1alpha1'], 'kinds': ['CloneSet']}]"

static const char *cloneset =
    "{'apiVersion': 'apps.kruise.io/v1alpha1', 'kind': 'CloneSet', 'metadata': {'name': 'web', 'namespace': 'shop'},"
    " 'spec': {'replicas': 5, 'paused': false}, 'status': {'readyReplicas': 3}}";

/* A registry with a webhook backend holding cfg (stolen). */
struct rig {
    fl_interp *ip;
    fl_webhook_backend *b;
};

static struct rig rig_new(json_t *cfg, const fl_webhook_options *opt)
{
    struct rig r = {fl_interp_new(), fl_webhook_backend_new(opt)};
    fl_webhook_backend_attach(r.b, r.ip);
    if (cfg) {
        char *e = NULL;
        if (fl_webhook_backend_set(r.b, cfg, &e))
            fail_msg("set: %s", e);
        json_decref(cfg);
    }
    return r;
}

static void rig_free(struct rig *r)
{
    fl_webhook_backend_detach(r->b);
    fl_webhook_backend_free(r->b);
    fl_interp_free(r->ip);
}

/* ---- every operation end to end ---- */

static void test_operations_end_to_end(void **state)
{
    struct rig r = rig_new(config("hooks", hook("clone.example.com", "/interpret", CLONESET_ALL, 0, 0), NULL), NULL);
    json_t *obj = J(cloneset), *out = NULL, *req = NULL, *last;
    char *err = NULL;
    int64_t n = -1;

    /* replicas and requirements: quantities come back canonical */
    assert_int_equal(fl_interp_get_replicas(r.ip, obj, &n, &req, &err), 0);
    assert_int_equal(n, 5);
    assert_json(req, "{'resourceRequest': {'cpu': '500m', 'memory': '1Gi'}, 'nodeClaim': {'nodeSelector': "
                     "{'disk': 'ssd'}}, 'namespace': 'web'}");
    json_decref(req);
    /* what was sent: a ResourceInterpreterContext as Karmada builds it */
    last = last_request();
    assert_string_equal(json_string_value(json_object_get(last, "apiVersion")), "config.karmada.io/v1alpha1");
    assert_string_equal(json_string_value(json_object_get(last, "kind")), "ResourceInterpreterContext");
    json_t *rq = json_object_get(last, "request");
    assert_json(json_object_get(rq, "kind"), "{'group': 'apps.kruise.io', 'version': 'v1alpha1', 'kind': 'CloneSet'}");
    assert_string_equal(json_string_value(json_object_get(rq, "name")), "web");
    assert_string_equal(json_string_value(json_object_get(rq, "namespace")), "shop");
    assert_string_equal(json_string_value(json_object_get(rq, "operation")), "InterpretReplica");
    assert_int_equal(strlen(json_string_value(json_object_get(rq, "uid"))), 36);
    assert_true(json_equal(json_object_get(rq, "object"), obj));
    assert_null(json_object_get(rq, "observedObject"));
    json_decref(last);

    /* components: InterpretComponent sent, response.components checked, canonical (the
     * component's namespace is not Karmada's: dropped) and sorted by name */
    assert_int_equal(fl_interp_get_components(r.ip, obj, &out, &err), 0);
    assert_json(out, "[{'name': 'leader', 'replicas': 1}, {'name': 'worker', 'replicas': 5,"
                     " 'replicaRequirements': {'resourceRequest': {'cpu': '500m'}}}]");
    json_decref(out);
    last = last_request();
    assert_string_equal(json_string_value(json_object_get(json_object_get(last, "request"), "operation")),
                        "InterpretComponent");
    json_decref(last);

    /* revise: the count travels as request.replicas, the patch comes back applied */
    assert_int_equal(fl_interp_revise_replica(r.ip, obj, 2, &out, &err), 0);
    assert_int_equal(jint(out, "spec", "replicas"), 2);
    assert_int_equal(jint(obj, "spec", "replicas"), 5); /* input untouched */
    last = last_request();
    assert_int_equal(jint(last, "request", "replicas"), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(last, "request"), "operation")),
                        "ReviseReplica");
    json_decref(last);
    json_decref(out);

    /* retain: observedObject sent, the member's spec.paused kept through the patch */
    json_t *observed = J(cloneset);
    json_object_set_new(json_object_get(observed, "spec"), "paused", json_true());
    assert_int_equal(fl_interp_retain(r.ip, obj, observed, &out, &err), 0);
    assert_true(json_is_true(json_object_get(json_object_get(out, "spec"), "paused")));
    last = last_request();
    assert_true(json_equal(json_object_get(json_object_get(last, "request"), "observedObject"), observed));
    json_decref(last);
    json_decref(out);
    json_decref(observed);

    /* reflect status */
    json_t *st = NULL;
    assert_int_equal(fl_interp_reflect_status(r.ip, obj, &st, &err), 0);
    assert_json(st, "{'readyReplicas': 3}");
    json_decref(st);

    /* aggregate status: the items travel as request.aggregatedStatus */
    json_t *items = J("[{'clusterName': 'a', 'status': {'readyReplicas': 2}, 'applied': true},"
                      " {'clusterName': 'b', 'status': {'readyReplicas': 4}, 'applied': true}]");
    assert_int_equal(fl_interp_aggregate_status(r.ip, obj, items, &out, &err), 0);
    assert_json(json_object_get(out, "status"), "{'readyReplicas': 6}");
    last = last_request();
    assert_true(json_equal(json_object_get(json_object_get(last, "request"), "aggregatedStatus"), items));
    json_decref(last);
    json_decref(out);
    json_decref(items);

    /* health both ways */
    enum fl_health h;
    assert_int_equal(fl_interp_health(r.ip, obj, &h, &err), 0);
    assert_int_equal(h, FL_HEALTH_UNHEALTHY);
    json_object_set_new(json_object_get(obj, "status"), "readyReplicas", json_integer(5));
    assert_int_equal(fl_interp_health(r.ip, obj, &h, &err), 0);
    assert_int_equal(h, FL_HEALTH_HEALTHY);

    /* dependencies: validated, sorted, duplicates dropped */
    json_t *deps = NULL;
    assert_int_equal(fl_interp_get_dependencies(r.ip, obj, &deps, &err), 0);
    assert_json(deps, "[{'apiVersion': 'v1', 'kind': 'ConfigMap', 'namespace': 'web',"
                      "  'labelSelector': {'matchLabels': {'app': 'web'}}},"
                      " {'apiVersion': 'v1', 'kind': 'ConfigMap', 'namespace': 'web', 'name': 'z'},"
                      " {'apiVersion': 'v1', 'kind': 'Secret', 'namespace': 'web', 'name': 'b'}]");
    json_decref(deps);
    assert_null(err);
    json_decref(obj);
    rig_free(&r);
}

/* A webhook answering no patch leaves the object as sent. */
static void test_patch_operations_without_patch_return_object(void **state)
{
    struct rig r = rig_new(config("hooks", hook("clone.example.com", "/empty", CLONESET_ALL, 0, 0), NULL), NULL);
    json_t *obj = J(cloneset), *out = NULL;
    char *err = NULL;
    assert_int_equal(fl_interp_revise_replica(r.ip, obj, 1, &out, &err), 0);
    assert_true(json_equal(out, obj));
    json_decref(out);
    json_decref(obj);
    rig_free(&r);
}

/* A large object goes out at once (no Expect: 100-continue round, which this server, like
 * many, does not answer). */
static void test_large_objects_are_sent_without_delay(void **state)
{
    struct rig r = rig_new(config("hooks", hook("clone.example.com", "/interpret", CLONESET_ALL, 0, 0), NULL), NULL);
    json_t *obj = J(cloneset);
    /* beyond curl's threshold for sending Expect (1 MiB in the curl we build with) */
    char *big = fl_malloc(1500001);
    memset(big, 'x', 1500000);
    big[1500000] = '\0';
    json_object_set_new(json_object_get(obj, "metadata"), "annotations", json_pack("{s:s}", "big", big));
    free(big);
    enum fl_health h;
    char *err = NULL;
    int64_t t0 = now_ms();
    assert_int_equal(fl_interp_health(r.ip, obj, &h, &err), 0);
    assert_true(now_ms() - t0 < 800);
    json_t *last = last_request();
    assert_true(json_equal(json_object_get(json_object_get(last, "request"), "object"), obj));
    json_decref(last);
    json_decref(obj);
    rig_free(&r);
}

/* ---- rules ---- */

static bool has(fl_webhook_backend *b, const char *av, const char *kind, enum fl_interp_op op)
{
    return fl_webhook_backend_vtable.has(b, av, kind, op);
}

static void test_rules_match_exactly_and_with_wildcards(void **state)
{
    json_t *cfg = config(
        "rules",
        hook("health.example.com", "/by/health",
             "[{'operations': ['InterpretHealth'], 'apiGroups': ['apps.kruise.io'], 'apiVersions': ['v1alpha1'],"
             " 'kinds': ['CloneSet', 'Advanced']}]",
             0, 0),
        hook("core.example.com", "/by/core",
             "[{'operations': ['*'], 'apiGroups': [''], 'apiVersions': ['*'], 'kinds': ['*']}]", 0, 0),
        hook("anygroup.example.com", "/by/anygroup",
             "[{'operations': ['InterpretStatus', 'Retain'], 'apiGroups': ['*'], 'apiVersions': ['v2'],"
             " 'kinds': ['Widget']}]",
             0, 0),
        hook("component.example.com", "/by/component",
             "[{'operations': ['InterpretComponent'], 'apiGroups': ['*'], 'apiVersions': ['*'], 'kinds': ['*']}]", 0,
             0),
        NULL);
    struct rig r = rig_new(cfg, NULL);
    /* exact group, version, kind, operation */
    assert_true(has(r.b, "apps.kruise.io/v1alpha1", "CloneSet", FL_INTERP_HEALTH));
    assert_true(has(r.b, "apps.kruise.io/v1alpha1", "Advanced", FL_INTERP_HEALTH));
    assert_false(has(r.b, "apps.kruise.io/v1alpha1", "CloneSet", FL_INTERP_REPLICA));
    assert_false(has(r.b, "apps.kruise.io/v1beta1", "CloneSet", FL_INTERP_HEALTH));
    assert_false(has(r.b, "apps.other.io/v1alpha1", "CloneSet", FL_INTERP_HEALTH));
    assert_false(has(r.b, "apps.kruise.io/v1alpha1", "StatefulSet", FL_INTERP_HEALTH));
    /* the core group is "", any version, any kind, every operation */
    for (int op = 0; op < FL_INTERP_OP_COUNT; op++) {
        assert_true(has(r.b, "v1", "ConfigMap", op));
        assert_true(has(r.b, "v2", "Anything", op));
    }
    assert_false(has(r.b, "apps/v1", "Deployment", FL_INTERP_REPLICA));
    /* any group, one version and kind */
    assert_true(has(r.b, "x.io/v2", "Widget", FL_INTERP_REFLECT_STATUS));
    assert_true(has(r.b, "y.io/v2", "Widget", FL_INTERP_RETAIN));
    assert_false(has(r.b, "y.io/v1", "Widget", FL_INTERP_RETAIN));
    assert_false(has(r.b, "y.io/v2", "Widget", FL_INTERP_HEALTH));
    /* InterpretComponent claims that operation only */
    assert_true(has(r.b, "z.io/v1", "Gadget", FL_INTERP_COMPONENT));
    assert_false(has(r.b, "z.io/v1", "Gadget", FL_INTERP_REPLICA));

    /* the registry asks the matching webhook: core kinds go to core.example.com */
    json_t *cm = J("{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'c', 'namespace': 'd'}}"), *st;
    char *err = NULL;
    assert_int_equal(fl_interp_reflect_status(r.ip, cm, &st, &err), 0);
    assert_json(st, "{'by': 'core'}");
    json_decref(st);
    json_decref(cm);
    /* a kind no webhook claims falls through to the next backend (native: none here) */
    json_t *gadget = J("{'apiVersion': 'z.io/v1', 'kind': 'Gadget', 'metadata': {'name': 'g'}}");
    int64_t n;
    assert_int_equal(fl_interp_get_replicas(r.ip, gadget, &n, &st, &err), FL_EUNSUPPORTED);
    assert_contains(err, "no backend has a InterpretReplica hook");
    free(err);
    json_decref(gadget);
    rig_free(&r);
}

/* ---- which webhook answers ---- */

static const char *answered_by(struct rig *r)
{
    static char by[64];
    json_t *obj = J(cloneset), *st = NULL;
    char *err = NULL;
    if (fl_interp_reflect_status(r->ip, obj, &st, &err))
        fail_msg("reflect: %s", err);
    snprintf(by, sizeof by, "%s", json_string_value(json_object_get(st, "by")));
    json_decref(st);
    json_decref(obj);
    return by;
}

static void test_first_webhook_by_configuration_then_name_answers(void **state)
{
    struct rig r = rig_new(config("b-hooks", hook("one.example.com", "/by/b-one", CLONESET_ALL, 0, 0), NULL), NULL);
    assert_string_equal(answered_by(&r), "b-one");
    /* a configuration sorting first takes over; inside it the webhook sorting first
     * answers, whatever its position in the list */
    json_t *a = config("a-hooks", hook("zed.example.com", "/by/a-zed", CLONESET_ALL, 0, 0),
                       hook("alpha.example.com", "/by/a-alpha", CLONESET_ALL, 0, 0), NULL);
    assert_int_equal(fl_webhook_backend_set(r.b, a, NULL), 0);
    json_decref(a);
    assert_int_equal(fl_webhook_backend_count(r.b), 2);
    assert_string_equal(answered_by(&r), "a-alpha");
    /* Karmada sorts "<configuration>/<webhook>" as strings: "a-hooks-2/..." comes before
     * "a-hooks/..." because '-' sorts before '/' */
    json_t *a2 = config("a-hooks-2", hook("zzz.example.com", "/by/a2-zzz", CLONESET_ALL, 0, 0), NULL);
    assert_int_equal(fl_webhook_backend_set(r.b, a2, NULL), 0);
    json_decref(a2);
    assert_string_equal(answered_by(&r), "a2-zzz");
    /* deleting hands the operation back */
    assert_int_equal(fl_webhook_backend_delete(r.b, "a-hooks-2"), 0);
    assert_int_equal(fl_webhook_backend_delete(r.b, "a-hooks"), 0);
    assert_int_equal(fl_webhook_backend_delete(r.b, "a-hooks"), FL_ENOTFOUND);
    assert_string_equal(answered_by(&r), "b-one");
    /* replacing a configuration by name */
    json_t *b2 = config("b-hooks", hook("one.example.com", "/by/b-one-v2", CLONESET_ALL, 0, 0), NULL);
    assert_int_equal(fl_webhook_backend_set(r.b, b2, NULL), 0);
    json_decref(b2);
    assert_int_equal(fl_webhook_backend_count(r.b), 1);
    assert_string_equal(answered_by(&r), "b-one-v2");
    /* a rule that does not match does not answer even when it sorts first */
    json_t *a3 = config("a-hooks",
                        hook("alpha.example.com", "/by/nope",
                             "[{'operations': ['InterpretHealth'], 'apiGroups': ['*'], 'apiVersions': ['*'],"
                             " 'kinds': ['*']}]",
                             0, 0),
                        NULL);
    assert_int_equal(fl_webhook_backend_set(r.b, a3, NULL), 0);
    json_decref(a3);
    assert_string_equal(answered_by(&r), "b-one-v2");
    rig_free(&r);
}

/* ---- failures ---- */

/* Run InterpretHealth (or op) on the CloneSet with one webhook at path; return rc, *err. */
static int fail_call(const char *path, enum fl_interp_op op, int timeout, int ca, const fl_webhook_options *opt,
                     char **err)
{
    struct rig r = rig_new(config("hooks", hook("clone.example.com", path, CLONESET_ALL, timeout, ca), NULL), opt);
    json_t *obj = J(cloneset), *out = NULL;
    int64_t n;
    enum fl_health h;
    int rc;
    *err = NULL;
    switch (op) {
    case FL_INTERP_REPLICA: rc = fl_interp_get_replicas(r.ip, obj, &n, &out, err); break;
    case FL_INTERP_REVISE_REPLICA: rc = fl_interp_revise_replica(r.ip, obj, 3, &out, err); break;
    case FL_INTERP_RETAIN: rc = fl_interp_retain(r.ip, obj, obj, &out, err); break;
    case FL_INTERP_REFLECT_STATUS: rc = fl_interp_reflect_status(r.ip, obj, &out, err); break;
    case FL_INTERP_AGGREGATE_STATUS: rc = fl_interp_aggregate_status(r.ip, obj, NULL, &out, err); break;
    case FL_INTERP_DEPENDENCY: rc = fl_interp_get_dependencies(r.ip, obj, &out, err); break;
    case FL_INTERP_COMPONENT: rc = fl_interp_get_components(r.ip, obj, &out, err); break;
    default:
        rc = fl_interp_health(r.ip, obj, &h, err);
        if (rc)
            assert_int_equal(h, FL_HEALTH_UNKNOWN);
        break;
    }
    if (rc)
        assert_null(out);
    json_decref(out);
    json_decref(obj);
    rig_free(&r);
    /* one line, naming backend, webhook, configuration and operation */
    if (rc && *err) {
        assert_null(strchr(*err, '\n'));
        assert_contains(*err, "webhook: ");
        assert_contains(*err, "webhook \"clone.example.com\" of ResourceInterpreterWebhookConfiguration \"hooks\": ");
        assert_contains(*err, fl_interp_op_name(op));
    }
    return rc;
}

static void test_timeout_is_honoured(void **state)
{
    char *err, *want = fl_asprintf("InterpretHealth: POST https://127.0.0.1:%d/slow: timed out after 1 s", srv.port);
    int64_t t0 = now_ms();
    assert_int_equal(fail_call("/slow", FL_INTERP_HEALTH, 1, 0, NULL, &err), FL_ETIMEDOUT);
    int64_t took = now_ms() - t0;
    assert_true(took >= 900 && took < 2000);
    assert_contains(err, want);
    free(want);
    free(err);
}

static void test_connection_refused(void **state)
{
    /* a port nobody listens on: bind, note it, close */
    int port, fd = listen_any(&port);
    close(fd);
    json_t *cfg = config("hooks", hook("clone.example.com", "/x", CLONESET_ALL, 2, 0), NULL);
    char *url = fl_asprintf("https://127.0.0.1:%d/x", port);
    json_object_set_new(json_object_get(json_array_get(json_object_get(cfg, "webhooks"), 0), "clientConfig"), "url",
                        json_string(url));
    struct rig r = rig_new(cfg, NULL);
    json_t *obj = J(cloneset);
    enum fl_health h;
    char *err = NULL, *want = fl_asprintf("InterpretHealth: POST %s: cannot connect", url);
    assert_int_equal(fl_interp_health(r.ip, obj, &h, &err), FL_EIO);
    assert_contains(err, "webhook \"clone.example.com\" of ResourceInterpreterWebhookConfiguration \"hooks\"");
    assert_contains(err, want);
    free(want);
    free(err);
    free(url);
    json_decref(obj);
    rig_free(&r);
}

static void test_tls_verification_failures(void **state)
{
    char *err;
    /* the server's certificate is not signed by the caBundle given */
    assert_int_equal(fail_call("/by/x", FL_INTERP_HEALTH, 0, 1, NULL, &err), FL_EIO);
    assert_contains(err, "TLS: the server's certificate is not trusted (verified against clientConfig.caBundle)");
    free(err);
    /* no caBundle: the system trust store does not know our test CA either */
    assert_int_equal(fail_call("/by/x", FL_INTERP_HEALTH, 0, -1, NULL, &err), FL_EIO);
    assert_contains(err, "TLS");
    free(err);
}

static void test_http_errors_and_malformed_answers(void **state)
{
    char *err;
    assert_int_equal(fail_call("/http500", FL_INTERP_HEALTH, 0, 0, NULL, &err), FL_EIO);
    assert_contains(err, "/http500: HTTP 500: boom the webhook crashed");
    free(err);
    assert_int_equal(fail_call("/nowhere", FL_INTERP_HEALTH, 0, 0, NULL, &err), FL_EIO);
    assert_contains(err, "HTTP 404: no such path");
    free(err);
    assert_int_equal(fail_call("/garbage", FL_INTERP_HEALTH, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "/garbage: the answer is not a ResourceInterpreterContext");
    free(err);
    assert_int_equal(fail_call("/noresponse", FL_INTERP_HEALTH, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "the answer has no response object");
    free(err);
    fl_webhook_options small = {.max_response = 1000};
    assert_int_equal(fail_call("/big", FL_INTERP_HEALTH, 0, 0, &small, &err), FL_ETOOBIG);
    assert_contains(err, "the answer is larger than 1000 bytes");
    free(err);
}

static void test_refusals_and_bad_responses(void **state)
{
    char *err;
    assert_int_equal(fail_call("/refuse", FL_INTERP_REPLICA, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "InterpretReplica: POST");
    assert_contains(err, "the webhook failed the request: replicas are secret (code 403)");
    free(err);
    assert_int_equal(fail_call("/nostatus", FL_INTERP_HEALTH, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.successful is false and response.status");
    free(err);
    assert_int_equal(fail_call("/baduid", FL_INTERP_HEALTH, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.uid: expected \"");
    assert_contains(err, "got \"not-the-request-uid\"");
    free(err);
    /* required fields per operation */
    static const struct {
        enum fl_interp_op op;
        const char *words;
    } missing[] = {
        {FL_INTERP_HEALTH, "response.healthy: missing"},
        {FL_INTERP_REPLICA, "response.replicas: missing"},
        {FL_INTERP_REFLECT_STATUS, "response.rawStatus: missing"},
    };
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        assert_int_equal(fail_call("/empty", missing[i].op, 0, 0, NULL, &err), FL_EINVAL);
        assert_contains(err, missing[i].words);
        free(err);
    }
    /* an empty answer to dependencies is none */
    assert_int_equal(fail_call("/empty", FL_INTERP_DEPENDENCY, 0, 0, NULL, &err), 0);
    assert_int_equal(fail_call("/badreplicas", FL_INTERP_REPLICA, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.replicas: must be an integer from 0");
    free(err);
    assert_int_equal(fail_call("/badquantity", FL_INTERP_REPLICA, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.replicaRequirements.resourceRequest.cpu: invalid quantity \"lots\"");
    free(err);
    /* an empty answer to components is none; a bad list names the element */
    assert_int_equal(fail_call("/empty", FL_INTERP_COMPONENT, 0, 0, NULL, &err), 0);
    assert_int_equal(fail_call("/badcomponents", FL_INTERP_COMPONENT, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.components[1].name: \"a\" is also the name of component 0");
    free(err);
    assert_int_equal(fail_call("/baddeps", FL_INTERP_DEPENDENCY, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.dependencies[0]: dependency can not leave name and labelSelector all empty");
    free(err);
}

static void test_bad_patches(void **state)
{
    char *err;
    assert_int_equal(fail_call("/badpatch", FL_INTERP_REVISE_REPLICA, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "ReviseReplica: POST");
    assert_contains(err, "response.patch: cannot be applied: ");
    free(err);
    assert_int_equal(fail_call("/badpatch", FL_INTERP_RETAIN, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "Retain: POST");
    free(err);
    assert_int_equal(fail_call("/badpatch", FL_INTERP_AGGREGATE_STATUS, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "AggregateStatus: POST");
    free(err);
    assert_int_equal(fail_call("/badpatchtype", FL_INTERP_REVISE_REPLICA, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.patchType: \"MergePatch\" is not supported (only JSONPatch)");
    free(err);
    assert_int_equal(fail_call("/notbase64", FL_INTERP_REVISE_REPLICA, 0, 0, NULL, &err), FL_EINVAL);
    assert_contains(err, "response.patch: not valid base64");
    free(err);
}

static void test_service_reference_fails_naming_the_field(void **state)
{
    json_t *cfg = J("{'metadata': {'name': 'hooks'}, 'webhooks': [{'name': 'clone.example.com',"
                    " 'clientConfig': {'service': {'namespace': 'kruise', 'name': 'interp', 'path': '/interpret'}},"
                    " 'rules': " CLONESET_ALL ", 'interpreterContextVersions': ['v1alpha1']}]}");
    struct rig r = rig_new(cfg, NULL);
    json_t *obj = J(cloneset);
    enum fl_health h;
    char *err = NULL;
    /* the webhook claims its rules, so the failure is seen rather than skipped */
    assert_true(fl_interp_has(r.ip, "apps.kruise.io/v1alpha1", "CloneSet", FL_INTERP_HEALTH));
    assert_int_equal(fl_interp_health(r.ip, obj, &h, &err), FL_EINVAL);
    assert_contains(err, "webhook \"clone.example.com\" of ResourceInterpreterWebhookConfiguration \"hooks\": "
                         "InterpretHealth: clientConfig.service (kruise/interp:443/interpret)");
    assert_contains(err, "clientConfig.url");
    assert_null(strchr(err, '\n'));
    free(err);
    json_decref(obj);
    rig_free(&r);
}

/* ---- configurations that must be refused ---- */

static void test_invalid_configurations_name_the_field(void **state)
{
    static const struct {
        const char *cfg, *words;
    } bad[] = {
        {"[]", "must be a JSON object"},
        {"{'webhooks': []}", "metadata.name"},
        {"{'metadata': {'name': 'h'}, 'webhooks': {}}", "\"h\": webhooks: must be an array"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].name: Required value"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'nodots', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].name: Invalid value: \"nodots\": should be a domain with at least two segments"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'http://a/x'},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "ResourceInterpreterWebhookConfiguration \"h\": webhooks[0].clientConfig.url: 'https' is the only allowed "
         "URL scheme"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a/x?q=1'},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig.url: query parameters are not permitted"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://u@a/x'},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig.url: user information is not permitted"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https:///x'},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig.url: host must be specified"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig: Required value: exactly one of url or service"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a',"
         " 'service': {'namespace': 'n', 'name': 's'}}, 'interpreterContextVersions': ['v1alpha1']}]}",
         "exactly one of url or service"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'service': {'name': 's'}},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig.service.namespace: Required value"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'service': {'name': 's',"
         " 'namespace': 'n', 'port': 70000}}, 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig.service.port: must be an integer between 1 and 65535"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a',"
         " 'caBundle': '%%%'}, 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig.caBundle: not valid base64"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a',"
         " 'caBundle': 'aGVsbG8='}, 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].clientConfig.caBundle: holds no PEM certificate"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'timeoutSeconds': 31, 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[0].timeoutSeconds: Invalid value: the timeout value must be between 1 and 30 seconds"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'}}]}",
         "webhooks[0].interpreterContextVersions: Required value"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1beta1']}]}",
         "webhooks[0].interpreterContextVersions: Invalid value: must include at least one of v1alpha1"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1', 'v1alpha1']}]}",
         "webhooks[0].interpreterContextVersions[1]: Invalid value: \"v1alpha1\": duplicate version"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1'], 'rules': [{'operations': ['Explode'], 'apiGroups': ['*'],"
         " 'apiVersions': ['*'], 'kinds': ['*']}]}]}",
         "webhooks[0].rules[0].operations[0]: Unsupported value: \"Explode\""},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1'], 'rules': [{'operations': ['*', 'Retain'], 'apiGroups': ['*'],"
         " 'apiVersions': ['*'], 'kinds': ['*']}]}]}",
         "webhooks[0].rules[0].operations: if '*' is present, must not specify other operations"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1'], 'rules': [{'operations': ['Retain'], 'apiGroups': ['*'],"
         " 'apiVersions': ['*']}]}]}",
         "webhooks[0].rules[0].kinds: Required value"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1'], 'rules': [{'operations': ['Retain'], 'apiGroups': ['*', 'x'],"
         " 'apiVersions': ['*'], 'kinds': ['*']}]}]}",
         "webhooks[0].rules[0].apiGroups: if '*' is present, must not specify other values"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1'], 'rules': [{'operations': ['Retain'], 'apiGroups': [''],"
         " 'apiVersions': [''], 'kinds': ['*']}]}]}",
         "webhooks[0].rules[0].apiVersions[0]: Required value"},
        {"{'metadata': {'name': 'h'}, 'webhooks': [{'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1']}, {'name': 'a.b', 'clientConfig': {'url': 'https://a'},"
         " 'interpreterContextVersions': ['v1alpha1']}]}",
         "webhooks[1].name: Duplicate value: \"a.b\""},
    };
    fl_webhook_backend *b = fl_webhook_backend_new(NULL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *cfg = J(bad[i].cfg);
        char *err = NULL, *err2 = NULL;
        assert_int_equal(fl_webhook_config_check(cfg, &err), FL_EINVAL);
        assert_contains(err, bad[i].words);
        assert_int_equal(fl_webhook_backend_set(b, cfg, &err2), FL_EINVAL);
        assert_string_equal(err, err2);
        free(err);
        free(err2);
        json_decref(cfg);
    }
    /* the last good version stays when a bad one comes */
    json_t *good = config("h", hook("a.example.com", "/by/good", CLONESET_ALL, 0, 0), NULL);
    assert_int_equal(fl_webhook_config_check(good, NULL), 0);
    assert_int_equal(fl_webhook_backend_set(b, good, NULL), 0);
    json_object_set_new(json_array_get(json_object_get(good, "webhooks"), 0), "timeoutSeconds", json_integer(0));
    assert_int_equal(fl_webhook_backend_set(b, good, NULL), FL_EINVAL);
    assert_int_equal(fl_webhook_backend_count(b), 1);
    assert_true(has(b, "apps.kruise.io/v1alpha1", "CloneSet", FL_INTERP_HEALTH));
    json_decref(good);
    /* a configuration without webhooks is valid and claims nothing */
    json_t *none = J("{'metadata': {'name': 'empty'}, 'webhooks': []}");
    assert_int_equal(fl_webhook_backend_set(b, none, NULL), 0);
    json_decref(none);
    assert_int_equal(fl_webhook_backend_count(b), 2);
    fl_webhook_backend_free(b);
}

/* ---- connections ---- */

static void health_ok(struct rig *r)
{
    json_t *obj = J(cloneset);
    enum fl_health h;
    char *err = NULL;
    if (fl_interp_health(r->ip, obj, &h, &err))
        fail_msg("health: %s", err);
    assert_int_equal(h, FL_HEALTH_HEALTHY);
    json_decref(obj);
}

static void test_connections_are_kept_across_calls_and_reconfiguration(void **state)
{
    struct rig r = rig_new(config("hooks", hook("clone.example.com", "/by/keep", CLONESET_ALL, 0, 0), NULL), NULL);
    int a0 = atomic_load(&srv.accepts), h0 = atomic_load(&srv.handshakes);
    for (int i = 0; i < 20; i++)
        health_ok(&r);
    assert_int_equal(atomic_load(&srv.accepts) - a0, 1);
    assert_int_equal(atomic_load(&srv.handshakes) - h0, 1);
    /* the same endpoint re-applied (another path, new rules): the connection stays */
    json_t *again = config("hooks", hook("clone.example.com", "/by/keep2", CLONESET_ALL, 5, 0), NULL);
    assert_int_equal(fl_webhook_backend_set(r.b, again, NULL), 0);
    json_decref(again);
    health_ok(&r);
    assert_int_equal(atomic_load(&srv.accepts) - a0, 1);
    rig_free(&r);
}

struct worker {
    struct rig *r;
    int ok;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    json_t *obj = J(cloneset);
    for (int i = 0; i < 25; i++) {
        enum fl_health h;
        char *err = NULL;
        if (fl_interp_health(w->r->ip, obj, &h, &err) == 0 && h == FL_HEALTH_HEALTHY)
            w->ok++;
        free(err);
    }
    json_decref(obj);
    return NULL;
}

static void *slow_main(void *arg)
{
    struct worker *w = arg;
    json_t *obj = J("{'apiVersion': 'x.io/v1', 'kind': 'Slow', 'metadata': {'name': 's'}}");
    enum fl_health h;
    char *err = NULL;
    if (fl_interp_health(w->r->ip, obj, &h, &err) == FL_ETIMEDOUT)
        w->ok++;
    free(err);
    json_decref(obj);
    return NULL;
}

static void test_concurrent_calls(void **state)
{
    struct rig r = rig_new(config("hooks", hook("clone.example.com", "/by/many", CLONESET_ALL, 0, 0), NULL), NULL);
    /* a slow webhook of another configuration, on the same endpoint, runs alongside */
    json_t *slow = config("slow", hook("slow.example.com", "/slow",
                                       "[{'operations': ['InterpretHealth'], 'apiGroups': ['*'], 'apiVersions': ['*'],"
                                       " 'kinds': ['Slow']}]",
                                       1, 0),
                          NULL);
    assert_int_equal(fl_webhook_backend_set(r.b, slow, NULL), 0);
    json_decref(slow);
    int a0 = atomic_load(&srv.accepts);
    pthread_t t[9];
    struct worker w[9];
    for (int i = 0; i < 9; i++) {
        w[i] = (struct worker){&r, 0};
        pthread_create(&t[i], NULL, i == 8 ? slow_main : worker_main, &w[i]);
    }
    /* configuration changes while calls run: they wait for running calls, calls see one set */
    for (int i = 0; i < 5; i++) {
        json_t *other = config("other", hook("other.example.com", "/by/other",
                                             "[{'operations': ['Retain'], 'apiGroups': ['*'], 'apiVersions': ['*'],"
                                             " 'kinds': ['Other']}]",
                                             0, 0),
                               NULL);
        assert_int_equal(fl_webhook_backend_set(r.b, other, NULL), 0);
        json_decref(other);
        assert_int_equal(fl_webhook_backend_delete(r.b, "other"), 0);
    }
    for (int i = 0; i < 9; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].ok, i == 8 ? 1 : 25);
    }
    /* at most one connection per thread, never one per call */
    int conns = atomic_load(&srv.accepts) - a0;
    assert_true(conns >= 1 && conns <= 9);
    /* later calls reuse what the burst left open */
    int a1 = atomic_load(&srv.accepts);
    for (int i = 0; i < 10; i++)
        health_ok(&r);
    assert_int_equal(atomic_load(&srv.accepts), a1);
    rig_free(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* the slow handler may write to a client that gave up */
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operations_end_to_end),
        cmocka_unit_test(test_patch_operations_without_patch_return_object),
        cmocka_unit_test(test_large_objects_are_sent_without_delay),
        cmocka_unit_test(test_rules_match_exactly_and_with_wildcards),
        cmocka_unit_test(test_first_webhook_by_configuration_then_name_answers),
        cmocka_unit_test(test_timeout_is_honoured),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_tls_verification_failures),
        cmocka_unit_test(test_http_errors_and_malformed_answers),
        cmocka_unit_test(test_refusals_and_bad_responses),
        cmocka_unit_test(test_bad_patches),
        cmocka_unit_test(test_service_reference_fails_naming_the_field),
        cmocka_unit_test(test_invalid_configurations_name_the_field),
        cmocka_unit_test(test_connections_are_kept_across_calls_and_reconfiguration),
        cmocka_unit_test(test_concurrent_calls),
    };
    return cmocka_run_group_tests(tests, start_all, stop_all);
}
