/* test_client.c - the API client, watch and informer against a real API server in-process.
 *
 * Each test starts the server's own pieces the way `flotilla server` wires them
 * (src/cli/server_cmd.c): the kind table, a SQLite store in a temporary directory,
 * fl_api, and the HTTP transport on 127.0.0.1 with a port the kernel picks and bearer
 * token "t". The client then talks real HTTP to it, so these tests pin the wire
 * semantics the controllers and the agent depend on: CRUD and its error codes, list
 * paging, the four patch types, watch order and cancellation, discovery, and the
 * informer's list/watch/re-list cycle, including recovery after compaction (the
 * store's window is 5 revisions and compaction runs only when a test calls it).
 *
 * Every wait is bounded: WAIT_UNTIL fails the test instead of hanging it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/api_internal.h"
#include "api/http.h"
#include "api/kinds.h"
#include "core/metrics.h"
#include "api/tls.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "controllers/controller.h"
#include "controllers/execution.h"
#include "controllers/workstatus.h"
#include "core/timefmt.h"
#include "client/kubeconfig.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "store/store.h"

static const fl_gvr CM = {"v1", "configmaps"};
static const fl_gvr DEPLOY = {"apps/v1", "deployments"};

#include "testapi.h"
#include "testutil.h"

/* ---- fixture: an API server in this process ---- */

typedef struct fixture {
    char dir[64];
    fl_store *store;
    fl_api api;
    fl_http *http;
    int port;
    fl_client *c;
    bool local;        /* c is the in-process transport */
} fixture;

static int api_call(fixture *f, const char *method, const char *path, const char *body)
{
    return test_api_request(&f->api, method, path, NULL, body);
}

static void http_start(fixture *f, int port)
{
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    fl_http_config hc = {.listen = listen, .token = "t"};
    char *err = NULL;
    f->api.stopping = 0;
    int rc = fl_http_start(&hc, &f->api, &f->http, &err);
    if (rc)
        fail_msg("fl_http_start: %s", err ? err : "?");
    f->port = fl_http_port(f->http);
}

static fl_client *client_at(int port, const char *token)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    fl_kubeconfig kc;
    fl_kubeconfig_init(&kc, url, token);
    fl_client *c = NULL;
    assert_int_equal(fl_client_new(&kc, &(fl_client_options){.user_agent = "client-test/1.0"}, &c, NULL), 0);
    fl_kubeconfig_close(&kc);
    return c;
}

static fl_client *client_for(fixture *f, const char *token)
{
    return client_at(f->port, token);
}

/* Set by the setups of the compact runs: informers keep texts, with one hot slot for all
 * keys, so that nearly every object handed out is decoded from its text. */
static bool compact_informers;

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/fl-client-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char *db = fl_asprintf("%s/store.db", f->dir);
    fl_store_config sc = {.path = db, .compact_window = 5, .compact_interval_ms = -1};
    assert_int_equal(fl_store_open(&sc, &f->store), 0);
    free(db);
    f->api.store = f->store;
    f->api.bookmark_interval_ms = 60000;
    fl_api_load_crds(&f->api);
    assert_int_equal(api_call(f, "POST", "/api/v1/namespaces",
                              "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}"),
                     201);
    assert_int_equal(api_call(f, "POST", "/api/v1/namespaces",
                              "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"other\"}}"),
                     201);
    http_start(f, 0);
    f->c = client_for(f, "t");
    *state = f;
    return 0;
}

/* The same fixture with the controllers' in-process transport (fl_api_local_client) as
 * the client under test: every behaviour the wire tests pin must hold without the wire. */
static int setup_local(void **state)
{
    setup(state);
    fixture *f = *state;
    fl_client_free(f->c);
    f->c = fl_api_local_client(&f->api, "client-test/1.0");
    f->local = true;
    return 0;
}

static int setup_compact(void **state)
{
    compact_informers = true;
    return setup(state);
}

static int setup_local_compact(void **state)
{
    compact_informers = true;
    return setup_local(state);
}

static int teardown(void **state)
{
    compact_informers = false;
    fixture *f = *state;
    fl_client_free(f->c);
    fl_http_stop(f->http);
    fl_store_free(f->store);
    char *cmd = fl_asprintf("rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(cmd);
    free(f);
    return 0;
}

/* ---- a TCP proxy that can cut the line ----
 * The informer's outage test talks to the server through this, so that the test can
 * break its streams mid-flight and refuse it for a while (accept, then close at once)
 * while the test itself keeps using the server directly. */

#define PROXY_MAX 32

typedef struct proxy {
    int lfd, port, target;
    atomic_bool down, quit;
    pthread_t th;
    int a[PROXY_MAX], b[PROXY_MAX];
    int n;
} proxy;

static void proxy_drop(proxy *p, int i)
{
    close(p->a[i]);
    close(p->b[i]);
    p->a[i] = p->a[p->n - 1];
    p->b[i] = p->b[p->n - 1];
    p->n--;
}

static bool write_all(int fd, const char *buf, ssize_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, (size_t)n);
        if (w <= 0)
            return false;
        buf += w;
        n -= w;
    }
    return true;
}

static void *proxy_main(void *arg)
{
    proxy *p = arg;
    char buf[16384];
    while (!atomic_load(&p->quit)) {
        if (atomic_load(&p->down))
            while (p->n)
                proxy_drop(p, 0);
        struct pollfd pf[1 + 2 * PROXY_MAX];
        pf[0] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
        for (int i = 0; i < p->n; i++) {
            pf[1 + 2 * i] = (struct pollfd){.fd = p->a[i], .events = POLLIN};
            pf[2 + 2 * i] = (struct pollfd){.fd = p->b[i], .events = POLLIN};
        }
        int npf = 1 + 2 * p->n;
        if (poll(pf, (nfds_t)npf, 20) <= 0)
            continue;
        for (int i = p->n - 1; i >= 0; i--) {
            for (int side = 0; side < 2; side++) {
                struct pollfd *q = &pf[1 + 2 * i + side];
                if (!(q->revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                ssize_t r = read(q->fd, buf, sizeof buf);
                if (r <= 0 || !write_all(side ? p->a[i] : p->b[i], buf, r)) {
                    proxy_drop(p, i);
                    break;
                }
            }
        }
        if (pf[0].revents & POLLIN) {
            int c = accept(p->lfd, NULL, NULL);
            if (c < 0)
                continue;
            if (atomic_load(&p->down) || p->n == PROXY_MAX) {
                close(c);
                continue;
            }
            int s = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->target)};
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
                close(s);
                close(c);
                continue;
            }
            p->a[p->n] = c;
            p->b[p->n] = s;
            p->n++;
        }
    }
    while (p->n)
        proxy_drop(p, 0);
    return NULL;
}

static proxy *proxy_start(int target)
{
    proxy *p = fl_calloc(1, sizeof *p);
    p->target = target;
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(p->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(p->lfd, 64), 0);
    socklen_t len = sizeof sa;
    getsockname(p->lfd, (struct sockaddr *)&sa, &len);
    p->port = ntohs(sa.sin_port);
    pthread_create(&p->th, NULL, proxy_main, p);
    return p;
}

static void proxy_stop(proxy *p)
{
    atomic_store(&p->quit, true);
    pthread_join(p->th, NULL);
    close(p->lfd);
    free(p);
}

/* ---- helpers ---- */

static json_t *configmap(const char *name, const char *value)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", name,
                     "data", "k", value);
}

static void create_cm(fixture *f, const char *ns, const char *name, const char *value)
{
    json_t *obj = configmap(name, value), *out = NULL;
    fl_client_error err;
    int rc = fl_client_create(f->c, &CM, ns, obj, NULL, &out, &err);
    if (rc)
        fail_msg("create %s/%s: %d %s", ns, name, rc, err.message);
    json_decref(out);
    json_decref(obj);
}

static void patch_cm(fixture *f, const char *ns, const char *name, const char *value)
{
    char *p = fl_asprintf("{\"data\":{\"k\":\"%s\"}}", value);
    fl_client_error err;
    int rc = fl_client_patch(f->c, &CM, ns, name, FL_PATCH_MERGE, p, strlen(p), NULL, NULL, &err);
    if (rc)
        fail_msg("patch %s/%s: %d %s", ns, name, rc, err.message);
    free(p);
}

static void delete_cm(fixture *f, const char *ns, const char *name)
{
    fl_client_error err;
    int rc = fl_client_delete(f->c, &CM, ns, name, NULL, NULL, &err);
    if (rc)
        fail_msg("delete %s/%s: %d %s", ns, name, rc, err.message);
}

static const char *data_k(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "data"), "k"));
}

static json_t *deployment(const char *name)
{
    json_error_t je;
    char *s = fl_asprintf("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\"},"
                          "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
                          "\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},"
                          "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"nginx\"}]}}}}",
                          name, name, name);
    json_t *d = json_loads(s, 0, &je);
    free(s);
    assert_non_null(d);
    return d;
}

/* An event log shared between handler threads and the test. */
typedef struct rec {
    pthread_mutex_t mu;
    char *ev[1024];
    int n;
} rec;

static void rec_init(rec *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
}

static void rec_add(rec *r, char *s)
{
    pthread_mutex_lock(&r->mu);
    if (r->n < 1024)
        r->ev[r->n++] = s;
    else
        free(s);
    pthread_mutex_unlock(&r->mu);
}

static int rec_count(rec *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static bool rec_has(rec *r, const char *s)
{
    pthread_mutex_lock(&r->mu);
    bool found = false;
    for (int i = 0; i < r->n && !found; i++)
        found = !strcmp(r->ev[i], s);
    pthread_mutex_unlock(&r->mu);
    return found;
}

static void rec_close(rec *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->ev[i]);
    pthread_mutex_destroy(&r->mu);
}

static void rec_dump(rec *r)
{
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        fprintf(stderr, "  event %d: %s\n", i, r->ev[i]);
    pthread_mutex_unlock(&r->mu);
}

/* ---- CRUD and errors ---- */

static void test_create_get_update_delete_round_trip(void **state)
{
    fixture *f = *state;
    json_t *obj = configmap("cfg", "one"), *created = NULL, *got = NULL, *updated = NULL;
    fl_client_error err;
    assert_int_equal(fl_client_create(f->c, &CM, "default", obj, NULL, &created, &err), 0);
    const char *rv = fl_client_object_rv(created);
    assert_true(strlen(rv) > 0);
    assert_int_equal(fl_client_get(f->c, &CM, "default", "cfg", &got, &err), 0);
    assert_string_equal(fl_client_object_rv(got), rv);
    assert_string_equal(data_k(got), "one");
    /* the user agent named the field manager */
    const char *mgr = json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(got, "metadata"), "managedFields"), 0), "manager"));
    assert_string_equal(mgr, "client-test");

    json_object_set_new(json_object_get(got, "data"), "k", json_string("two"));
    assert_int_equal(fl_client_update(f->c, &CM, "default", got, NULL, &updated, &err), 0);
    assert_string_equal(data_k(updated), "two");
    assert_string_not_equal(fl_client_object_rv(updated), rv);

    json_t *gone = NULL;
    assert_int_equal(fl_client_delete(f->c, &CM, "default", "cfg", NULL, &gone, &err), 0);
    json_decref(gone);
    json_t *none = NULL;
    assert_int_equal(fl_client_get(f->c, &CM, "default", "cfg", &none, &err), FL_ENOTFOUND);
    assert_null(none);
    json_decref(obj);
    json_decref(created);
    json_decref(got);
    json_decref(updated);
}

static const json_t *managed_fields(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "managedFields");
}

static void test_answers_without_managed_fields_leave_them_to_the_server(void **state)
{
    fixture *f = *state;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
    fl_kubeconfig kc;
    fl_kubeconfig_init(&kc, url, "t");
    fl_client *c = NULL;
    assert_int_equal(fl_client_new(&kc, &(fl_client_options){.answers_without_managed_fields = true}, &c, NULL), 0);
    fl_kubeconfig_close(&kc);
    json_t *obj = configmap("lean", "one"), *created = NULL, *got = NULL, *updated = NULL, *whole = NULL;
    fl_client_error err;
    /* what a create, a get and an update answer comes without managedFields, the rest whole */
    assert_int_equal(fl_client_create(c, &CM, "default", obj, NULL, &created, &err), 0);
    assert_null(managed_fields(created));
    assert_true(strlen(fl_client_object_rv(created)) > 0);
    assert_int_equal(fl_client_get(c, &CM, "default", "lean", &got, &err), 0);
    assert_null(managed_fields(got));
    assert_string_equal(data_k(got), "one");
    json_object_set_new(json_object_get(got, "data"), "k", json_string("two"));
    assert_int_equal(fl_client_update(c, &CM, "default", got, NULL, &updated, &err), 0);
    assert_null(managed_fields(updated));
    assert_string_equal(data_k(updated), "two");
    /* the object itself kept who manages its fields: an update without the list is no reset */
    assert_int_equal(fl_client_get(f->c, &CM, "default", "lean", &whole, &err), 0);
    assert_true(json_array_size(managed_fields(whole)) > 0);
    json_decref(obj);
    json_decref(created);
    json_decref(got);
    json_decref(updated);
    json_decref(whole);
    fl_client_free(c);
}

static void test_update_status_changes_only_status(void **state)
{
    fixture *f = *state;
    json_t *d = deployment("web"), *created = NULL, *out = NULL;
    fl_client_error err;
    assert_int_equal(fl_client_create(f->c, &DEPLOY, "default", d, NULL, &created, &err), 0);
    json_object_set_new(json_object_get(created, "spec"), "replicas", json_integer(7));
    json_object_set_new(created, "status", json_pack("{s:i}", "readyReplicas", 1));
    assert_int_equal(fl_client_update_status(f->c, &DEPLOY, "default", created, NULL, &out, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "status"), "readyReplicas")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "spec"), "replicas")), 1);
    json_decref(d);
    json_decref(created);
    json_decref(out);
}

/* A watch callback that changes what it may (the event object's top level and metadata)
 * and stops after the first event, noting data.k as it arrived. */
static bool trim_and_stop(void *ctx, int type, json_t *obj, fl_blob *text)
{
    char *seen = ctx;
    snprintf(seen, 32, "%s", data_k(obj) ? data_k(obj) : "");
    json_object_del(obj, "data");
    json_object_set_new(json_object_get(obj, "metadata"), "labels", json_pack("{s:s}", "trimmed", "yes"));
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
    if (text) { /* in process: the stored bytes, whole, with none of that trimming */
        json_t *whole = fl_json_load(text->data, text->len);
        size_t n = strlen(seen);
        snprintf(seen + n, 32 - n, "|%s%s", data_k(whole) ? data_k(whole) : "",
                 json_object_get(json_object_get(whole, "metadata"), "managedFields") ? "+mf" : "");
        json_decref(whole);
    }
    return false;
}

/* What a caller does with what it sent or got does not reach what is stored, on either
 * transport (in process, the objects themselves cross without being encoded). */
static void test_objects_sent_and_received_stay_the_callers(void **state)
{
    fixture *f = *state;
    json_t *obj = configmap("own", "one"), *created = NULL, *got = NULL;
    fl_client_error err;
    assert_int_equal(fl_client_create(f->c, &CM, "default", obj, NULL, &created, &err), 0);
    /* the object sent is not changed by the server (no uid, resourceVersion or managedFields) */
    assert_null(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    assert_null(json_object_get(json_object_get(obj, "metadata"), "managedFields"));
    json_object_set_new(json_object_get(created, "data"), "k", json_string("changed by the caller"));
    json_object_del(created, "metadata");
    assert_int_equal(fl_client_get(f->c, &CM, "default", "own", &got, &err), 0);
    assert_string_equal(data_k(got), "one");

    /* an update whose answer is not asked for, then a watch from before it: its event is
     * the caller's to trim, and the next update starts from what is stored */
    fl_list_result l;
    assert_int_equal(fl_client_list(f->c, &CM, "default", NULL, &l, NULL), 0);
    json_object_set_new(json_object_get(got, "data"), "k", json_string("two"));
    assert_int_equal(fl_client_update(f->c, &CM, "default", got, NULL, NULL, &err), 0);
    assert_string_equal(data_k(got), "two");
    char seen[32] = "";
    fl_watch_opts o = {.resource_version = l.resource_version};
    assert_int_equal(fl_client_watch(f->c, &CM, "default", &o, trim_and_stop, seen, NULL, &err), 0);
    assert_string_equal(seen, f->local ? "two|two+mf" : "two");
    json_t *again = NULL;
    assert_int_equal(fl_client_get(f->c, &CM, "default", "own", &again, &err), 0);
    assert_string_equal(data_k(again), "two");
    assert_null(json_object_get(json_object_get(again, "metadata"), "labels"));
    assert_non_null(json_object_get(json_object_get(again, "metadata"), "managedFields"));
    json_t *patched = NULL;
    const char *mp = "{\"data\":{\"x\":\"y\"}}";
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "own", FL_PATCH_MERGE, mp, strlen(mp), NULL, &patched, &err),
                     0);
    assert_string_equal(data_k(patched), "two");
    assert_null(json_object_get(json_object_get(patched, "metadata"), "labels"));
    fl_list_result_close(&l);
    json_decref(obj);
    json_decref(created);
    json_decref(got);
    json_decref(again);
    json_decref(patched);
}

/* A listed item's top level and metadata are the caller's to trim, as an informer's transform
 * does (in process the items share the stored objects below that); the next list, a get and
 * a watch still see the object as stored. */
static void test_listed_items_are_the_callers_to_trim(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "trimmed", "zero");
    fl_client_error err;
    /* an update whose answer nobody asks for: in process, the API keeps what it stored
     * decoded (decoded.c), and the list below hands that out */
    json_t *cur = NULL;
    assert_int_equal(fl_client_get(f->c, &CM, "default", "trimmed", &cur, &err), 0);
    json_object_set_new(json_object_get(cur, "data"), "k", json_string("one"));
    assert_int_equal(fl_client_update(f->c, &CM, "default", cur, NULL, NULL, &err), 0);
    json_decref(cur);
    fl_list_result l;
    assert_int_equal(fl_client_list_all(f->c, &CM, "default", NULL, NULL, &l, &err), 0);
    assert_int_equal(json_array_size(l.items), 1);
    json_t *item = json_array_get(l.items, 0);
    json_t *md = json_object_get(item, "metadata");
    assert_non_null(json_object_get(md, "managedFields"));
    json_object_del(md, "managedFields");
    json_object_set_new(md, "labels", json_pack("{s:s}", "trimmed", "by-the-caller"));
    json_object_del(item, "data");

    fl_list_result again;
    assert_int_equal(fl_client_list_all(f->c, &CM, "default", NULL, NULL, &again, &err), 0);
    json_t *fresh = json_array_get(again.items, 0);
    assert_string_equal(data_k(fresh), "one");
    assert_non_null(json_object_get(json_object_get(fresh, "metadata"), "managedFields"));
    assert_null(json_object_get(json_object_get(fresh, "metadata"), "labels"));
    json_t *got = NULL;
    assert_int_equal(fl_client_get(f->c, &CM, "default", "trimmed", &got, &err), 0);
    assert_string_equal(data_k(got), "one");
    assert_null(json_object_get(json_object_get(got, "metadata"), "labels"));
    assert_string_equal(l.resource_version, again.resource_version);
    assert_null(l.continue_token);
    json_decref(got);
    fl_list_result_close(&l);
    fl_list_result_close(&again);
}

/* An update that hands its object over: stored as sent (in process, without a copy), the
 * next read sees it, a stale precondition still conflicts, and nothing leaks (ASan). */
static void test_update_given_stores_the_object_handed_over(void **state)
{
    fixture *f = *state;
    fl_client_error err;
    json_t *got = NULL;
    create_cm(f, "default", "given", "one");
    assert_int_equal(fl_client_get(f->c, &CM, "default", "given", &got, &err), 0);
    json_t *stale = json_deep_copy(got);
    json_object_set_new(json_object_get(got, "data"), "k", json_string("two"));
    /* what the object handed over shares with others stays as it was (here its metadata) */
    json_t *other = json_pack("{s:O}", "metadata", json_object_get(got, "metadata"));
    json_t *before = json_deep_copy(json_object_get(other, "metadata"));
    char *rv = fl_strdup(json_string_value(json_object_get(before, "resourceVersion")));
    json_t *out = NULL;
    assert_int_equal(fl_client_update_given(f->c, &CM, "default", got, NULL, &out, &err), 0); /* takes got */
    assert_string_equal(data_k(out), "two");
    assert_string_not_equal(json_string_value(json_object_get(json_object_get(out, "metadata"), "resourceVersion")), rv);
    assert_string_equal(json_string_value(json_object_get(json_object_get(other, "metadata"), "resourceVersion")), rv);
    assert_true(json_equal(json_object_get(other, "metadata"), before));
    json_decref(before);
    free(rv);
    json_decref(other);
    json_decref(out);
    json_t *again = NULL;
    assert_int_equal(fl_client_get(f->c, &CM, "default", "given", &again, &err), 0);
    assert_string_equal(data_k(again), "two");
    json_object_set_new(json_object_get(stale, "data"), "k", json_string("three"));
    assert_int_equal(fl_client_update_given(f->c, &CM, "default", stale, NULL, NULL, &err), FL_ECONFLICT);
    json_decref(again);
    assert_int_equal(fl_client_get(f->c, &CM, "default", "given", &again, &err), 0);
    assert_string_equal(data_k(again), "two");
    json_decref(again);
}

static void test_errors_map_to_codes_with_the_status_message(void **state)
{
    fixture *f = *state;
    fl_client_error err;
    json_t *out = NULL;

    assert_int_equal(fl_client_get(f->c, &CM, "default", "missing", &out, &err), FL_ENOTFOUND);
    assert_int_equal(err.http, 404);
    assert_string_equal(err.reason, "NotFound");
    assert_non_null(strstr(err.message, "missing"));

    create_cm(f, "default", "dup", "x");
    json_t *obj = configmap("dup", "x");
    assert_int_equal(fl_client_create(f->c, &CM, "default", obj, NULL, &out, &err), FL_EEXIST);
    assert_int_equal(err.http, 409);
    assert_string_equal(err.reason, "AlreadyExists");
    assert_null(out);

    /* a stale resourceVersion loses: Conflict, not AlreadyExists */
    json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string("1"));
    assert_int_equal(fl_client_update(f->c, &CM, "default", obj, NULL, &out, &err), FL_ECONFLICT);
    assert_int_equal(err.http, 409);
    assert_string_equal(err.reason, "Conflict");
    json_decref(obj);

    obj = configmap("Not_A_Name", "x");
    assert_int_equal(fl_client_create(f->c, &CM, "default", obj, NULL, &out, &err), FL_EINVAL);
    assert_int_equal(err.http, 422);
    assert_string_equal(err.reason, "Invalid");
    assert_string_equal(err.field, "metadata.name");
    json_decref(obj);

    /* a body the server cannot decode: 400 */
    assert_int_equal(fl_client_request(f->c, "POST", "/api/v1/namespaces/default/configmaps", "application/json",
                                       "{nope", 5, NULL, &out, &err),
                     FL_EINVAL);
    assert_int_equal(err.http, 400);

    /* wrong token: 401, still FL_EINVAL, told apart by err.http */
    fl_client *bad = client_for(f, "wrong");
    assert_int_equal(fl_client_get(bad, &CM, "default", "dup", &out, &err), FL_EINVAL);
    assert_int_equal(err.http, 401);
    fl_client_free(bad);

    /* nothing listening: a transport error with no HTTP status */
    fl_kubeconfig kc;
    fl_kubeconfig_init(&kc, "http://127.0.0.1:1", "t");
    fl_client *dead = NULL;
    assert_int_equal(fl_client_new(&kc, NULL, &dead, NULL), 0);
    fl_kubeconfig_close(&kc);
    assert_int_equal(fl_client_get(dead, &CM, "default", "dup", &out, &err), FL_EIO);
    assert_int_equal(err.http, 0);
    assert_true(strlen(err.message) > 0);
    fl_client_free(dead);

    /* client-side argument checks */
    assert_int_equal(fl_client_get(f->c, &CM, "default", "", &out, &err), FL_EINVAL);
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "dup", FL_PATCH_APPLY, "{}", 2, NULL, &out, &err),
                     FL_EINVAL);
    assert_non_null(strstr(err.message, "fieldManager"));
}

/* on_page: the size of each page, in order */
/* texts: none over HTTP without page_texts; in process, the stored values (whole, with
 * managedFields) of the items handed over */
static void note_stored(json_t *items, fl_blob *const *texts)
{
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        json_t *stored = fl_json_load(texts[i]->data, texts[i]->len);
        assert_non_null(stored);
        assert_string_equal(json_string_value(json_object_get(json_object_get(stored, "metadata"), "name")),
                            json_string_value(json_object_get(json_object_get(item, "metadata"), "name")));
        assert_string_equal(fl_client_object_rv(stored), fl_client_object_rv(item));
        assert_non_null(json_object_get(json_object_get(stored, "metadata"), "managedFields"));
        json_decref(stored);
    }
}

/* on_page without page_texts: the pages' sizes, and whether they came with stored values */
typedef struct size_pages {
    json_t *sizes;
    int stored;
} size_pages;

static void note_page(void *ctx, json_t *items, fl_blob *const *texts)
{
    size_pages *sp = ctx;
    if (texts) {
        note_stored(items, texts);
        sp->stored++;
    }
    json_array_append_new(sp->sizes, json_integer(items ? (json_int_t)json_array_size(items) : -1));
}

/* on_page with page_texts: what each item's text and metadata held */
typedef struct text_pages {
    bool local;
    int pages, texts;
    json_t *names;
} text_pages;

static void note_texts(void *ctx, json_t *items, fl_blob *const *texts)
{
    text_pages *tp = ctx;
    if (!items)
        return;
    tp->pages++;
    size_t i;
    json_t *item;
    if (texts && tp->local) /* the items decoded, and their stored values */
        note_stored(items, texts);
    json_array_foreach(items, i, item) {
        bool http = texts && !tp->local;
        json_t *obj = http ? fl_json_load(texts[i]->data, texts[i]->len) : json_incref(item);
        assert_non_null(obj);
        const char *name = json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
        assert_non_null(name);
        if (http) { /* the item is the keys a cache needs, the text the whole object */
            tp->texts++;
            json_t *md = json_object_get(item, "metadata"), *omd = json_object_get(obj, "metadata");
            assert_int_equal(json_object_size(item), 1);
            assert_int_equal(json_object_size(md), 3);
            assert_string_equal(json_string_value(json_object_get(omd, "name")), name);
            assert_string_equal(json_string_value(json_object_get(md, "namespace")), "default");
            assert_string_equal(fl_client_object_rv(item), fl_client_object_rv(obj));
            assert_non_null(json_object_get(omd, "uid"));
        }
        assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "data"), "k")), "v");
        assert_null(json_object_get(json_object_get(obj, "metadata"), "managedFields"));
        json_array_append_new(tp->names, json_string(name));
        json_decref(obj);
    }
}

static void test_list_pages_with_continue_at_one_snapshot(void **state)
{
    fixture *f = *state;
    char name[16];
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof name, "cm-%d", i);
        create_cm(f, "default", name, "v");
    }
    create_cm(f, "other", "elsewhere", "v");
    fl_client_error err;
    fl_list_result page;
    fl_list_opts o = {.limit = 3};
    assert_int_equal(fl_client_list(f->c, &CM, "default", &o, &page, &err), 0);
    assert_int_equal(json_array_size(page.items), 3);
    assert_non_null(page.continue_token);
    char snapshot[32];
    strcpy(snapshot, page.resource_version);

    create_cm(f, "default", "cm-late", "v"); /* not in the snapshot being paged */
    size_t total = json_array_size(page.items);
    int pages = 1;
    while (page.continue_token) {
        fl_list_opts next = {.limit = 3, .continue_token = page.continue_token};
        fl_list_result p2;
        assert_int_equal(fl_client_list(f->c, &CM, "default", &next, &p2, &err), 0);
        assert_string_equal(p2.resource_version, snapshot);
        total += json_array_size(p2.items);
        fl_list_result_close(&page);
        page = p2;
        pages++;
    }
    fl_list_result_close(&page);
    assert_int_equal(total, 7);
    assert_int_equal(pages, 3);

    /* list_all pages on its own and sees the new snapshot; all namespaces with ns NULL */
    fl_list_result all;
    assert_int_equal(fl_client_list_all(f->c, &CM, "default", &(fl_list_opts){.limit = 2}, NULL, &all, &err), 0);
    assert_int_equal(json_array_size(all.items), 8);
    assert_null(all.continue_token);
    fl_list_result_close(&all);
    assert_int_equal(fl_client_list_all(f->c, &CM, NULL, NULL, NULL, &all, &err), 0);
    assert_int_equal(json_array_size(all.items), 9);
    fl_list_result_close(&all);

    /* pages handed over as they come: gathered as well, or (take_pages) only handed over */
    for (int take = 0; take < 2; take++) {
        size_pages sp = {.sizes = json_array()};
        json_t *seen = sp.sizes;
        fl_list_opts po = {.limit = 3, .on_page = note_page, .page_ctx = &sp, .take_pages = take};
        assert_int_equal(fl_client_list_all(f->c, &CM, "default", &po, NULL, &all, &err), 0);
        if (f->local) { /* in process a list is one page: there is no response to bound */
            /* taken, the items come as the server decodes them, with their stored values,
             * and the answer's empty page last */
            assert_int_equal(json_array_size(seen), take ? 2 : 1);
            assert_int_equal(json_integer_value(json_array_get(seen, 0)), 8);
            assert_int_equal(sp.stored, take ? 1 : 0);
        } else {
            assert_int_equal(json_array_size(seen), 3); /* 3 + 3 + 2 */
            assert_int_equal(json_integer_value(json_array_get(seen, 0)), 3);
            assert_int_equal(json_integer_value(json_array_get(seen, 2)), 2);
            assert_int_equal(sp.stored, 0);
        }
        assert_int_equal(json_array_size(all.items), take ? 0 : 8);
        fl_list_result_close(&all);
        json_decref(seen);
    }

    /* items as texts: over HTTP none is decoded but its metadata; in process they come
     * decoded (the server has the texts); either way without the fields skipped */
    static const char *const no_mf[] = {"metadata.managedFields", NULL};
    text_pages tp = {.local = f->local, .names = json_array()};
    fl_list_opts to = {.limit = 3, .skip_fields = no_mf, .on_page = note_texts, .page_ctx = &tp,
                       .take_pages = true, .page_texts = true};
    assert_int_equal(fl_client_list_all(f->c, &CM, "default", &to, NULL, &all, &err), 0);
    assert_int_equal(json_array_size(all.items), 0);
    assert_null(all.texts);
    fl_list_result_close(&all);
    assert_int_equal(json_array_size(tp.names), 8);
    assert_string_equal(json_string_value(json_array_get(tp.names, 0)), "cm-0");
    assert_string_equal(json_string_value(json_array_get(tp.names, 7)), "cm-late");
    assert_int_equal(tp.pages, f->local ? 2 : 3); /* in process: the items, then the answer's none */
    assert_int_equal(tp.texts, f->local ? 0 : 8); /* in process: not the items' own texts */
    json_decref(tp.names);
}

static void test_list_filters_by_label_and_field_selectors(void **state)
{
    fixture *f = *state;
    const char *names[] = {"a", "b", "c"};
    const char *tiers[] = {"web", "db", "web"};
    for (int i = 0; i < 3; i++) {
        json_t *o = configmap(names[i], "v"), *out = NULL;
        json_object_set_new(json_object_get(o, "metadata"), "labels", json_pack("{s:s}", "tier", tiers[i]));
        assert_int_equal(fl_client_create(f->c, &CM, "default", o, NULL, &out, NULL), 0);
        json_decref(o);
        json_decref(out);
    }
    fl_list_result l;
    assert_int_equal(fl_client_list(f->c, &CM, "default", &(fl_list_opts){.label_selector = "tier in (web)"}, &l, NULL),
                     0);
    assert_int_equal(json_array_size(l.items), 2);
    fl_list_result_close(&l);
    assert_int_equal(fl_client_list(f->c, &CM, NULL, &(fl_list_opts){.field_selector = "metadata.name=b"}, &l, NULL), 0);
    assert_int_equal(json_array_size(l.items), 1);
    fl_list_result_close(&l);
    fl_client_error err;
    assert_int_equal(fl_client_list(f->c, &CM, NULL, &(fl_list_opts){.label_selector = "tier in (("}, &l, &err),
                     FL_EINVAL);
    assert_int_equal(err.http, 400);
    assert_null(l.items);
}

static void test_continue_token_expires_after_compaction(void **state)
{
    fixture *f = *state;
    char name[16];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "cm-%d", i);
        create_cm(f, "default", name, "v");
    }
    fl_list_result page;
    assert_int_equal(fl_client_list(f->c, &CM, "default", &(fl_list_opts){.limit = 2}, &page, NULL), 0);
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "%d", i);
        patch_cm(f, "default", "cm-0", name);
    }
    fl_store_compact(f->store);
    fl_client_error err;
    fl_list_result p2;
    assert_int_equal(fl_client_list(f->c, &CM, "default",
                                    &(fl_list_opts){.limit = 2, .continue_token = page.continue_token}, &p2, &err),
                     FL_EEXPIRED);
    assert_int_equal(err.http, 410);
    assert_string_equal(err.reason, "Expired");
    fl_list_result_close(&page);
}

static void test_patch_types_merge_json_strategic_and_apply(void **state)
{
    fixture *f = *state;
    fl_client_error err;
    json_t *out = NULL;
    create_cm(f, "default", "p", "v0");

    const char *merge = "{\"data\":{\"extra\":\"e\"}}";
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "p", FL_PATCH_MERGE, merge, strlen(merge), NULL, &out, &err),
                     0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "data"), "extra")), "e");
    assert_string_equal(data_k(out), "v0");
    json_decref(out);

    const char *jp = "[{\"op\":\"replace\",\"path\":\"/data/k\",\"value\":\"v1\"},{\"op\":\"remove\",\"path\":\"/data/extra\"}]";
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "p", FL_PATCH_JSON, jp, strlen(jp), NULL, &out, &err), 0);
    assert_string_equal(data_k(out), "v1");
    assert_null(json_object_get(json_object_get(out, "data"), "extra"));
    json_decref(out);

    /* strategic merge adds a container by name where a merge patch would replace the list */
    json_t *d = deployment("web"), *created = NULL;
    assert_int_equal(fl_client_create(f->c, &DEPLOY, "default", d, NULL, &created, &err), 0);
    const char *smp = "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"sidecar\",\"image\":\"busybox\"}]}}}}";
    assert_int_equal(
        fl_client_patch(f->c, &DEPLOY, "default", "web", FL_PATCH_STRATEGIC, smp, strlen(smp), NULL, &out, &err), 0);
    json_t *containers = json_object_get(
        json_object_get(json_object_get(json_object_get(out, "spec"), "template"), "spec"), "containers");
    assert_int_equal(json_array_size(containers), 2);
    json_decref(out);
    json_decref(d);
    json_decref(created);

    /* server-side apply: create, conflict with another manager, then force */
    const char *apply_a = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: from-a\n";
    fl_patch_opts a = {.field_manager = "mgr-a"};
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "applied", FL_PATCH_APPLY, apply_a, strlen(apply_a), &a,
                                     &out, &err),
                     0);
    assert_string_equal(data_k(out), "from-a");
    json_decref(out);
    const char *apply_b = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: from-b\n";
    fl_patch_opts b = {.field_manager = "mgr-b"};
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "applied", FL_PATCH_APPLY, apply_b, strlen(apply_b), &b,
                                     &out, &err),
                     FL_ECONFLICT);
    assert_int_equal(err.http, 409);
    assert_non_null(strstr(err.message, "mgr-a"));
    b.force = true;
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "applied", FL_PATCH_APPLY, apply_b, strlen(apply_b), &b,
                                     &out, &err),
                     0);
    assert_string_equal(data_k(out), "from-b");
    json_decref(out);

    /* dry run answers the patched object without storing it */
    fl_patch_opts dry = {.dry_run = true};
    assert_int_equal(fl_client_patch(f->c, &CM, "default", "p", FL_PATCH_MERGE, merge, strlen(merge), &dry, &out, &err),
                     0);
    json_decref(out);
    assert_int_equal(fl_client_get(f->c, &CM, "default", "p", &out, &err), 0);
    assert_null(json_object_get(json_object_get(out, "data"), "extra"));
    json_decref(out);

    assert_int_equal(fl_client_patch(f->c, &CM, "default", "absent", FL_PATCH_MERGE, merge, strlen(merge), NULL, &out,
                                     &err),
                     FL_ENOTFOUND);
}

static void test_delete_honours_preconditions_dry_run_and_propagation(void **state)
{
    fixture *f = *state;
    fl_client_error err;
    json_t *obj = configmap("del", "v"), *created = NULL, *out = NULL;
    assert_int_equal(fl_client_create(f->c, &CM, "default", obj, NULL, &created, &err), 0);
    const char *uid = json_string_value(json_object_get(json_object_get(created, "metadata"), "uid"));

    fl_delete_opts wrong = {.precondition_uid = "00000000-0000-0000-0000-000000000000"};
    assert_int_equal(fl_client_delete(f->c, &CM, "default", "del", &wrong, &out, &err), FL_ECONFLICT);
    assert_int_equal(err.http, 409);
    fl_delete_opts stale = {.precondition_rv = "1"};
    assert_int_equal(fl_client_delete(f->c, &CM, "default", "del", &stale, &out, &err), FL_ECONFLICT);

    fl_delete_opts dry = {.dry_run = true};
    assert_int_equal(fl_client_delete(f->c, &CM, "default", "del", &dry, &out, &err), 0);
    json_decref(out);
    assert_int_equal(fl_client_get(f->c, &CM, "default", "del", &out, &err), 0);
    json_decref(out);

    fl_delete_opts right = {.precondition_uid = uid, .propagation_policy = "Background", .has_grace_period = true,
                            .grace_period_seconds = 0};
    assert_int_equal(fl_client_delete(f->c, &CM, "default", "del", &right, &out, &err), 0);
    json_decref(out);
    assert_int_equal(fl_client_get(f->c, &CM, "default", "del", &out, &err), FL_ENOTFOUND);
    assert_int_equal(fl_client_delete(f->c, &CM, "default", "del", NULL, NULL, &err), FL_ENOTFOUND);
    json_decref(obj);
    json_decref(created);
}

typedef struct hammer {
    fixture *f;
    int id;
    int failures;
} hammer;

static void *hammer_main(void *arg)
{
    hammer *h = arg;
    for (int i = 0; i < 25; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d-%d", h->id, i);
        json_t *o = configmap(name, "v"), *out = NULL;
        if (fl_client_create(h->f->c, &CM, "default", o, NULL, &out, NULL) != 0)
            h->failures++;
        json_decref(out);
        out = NULL;
        if (fl_client_get(h->f->c, &CM, "default", name, &out, NULL) != 0 || strcmp(data_k(out), "v") != 0)
            h->failures++;
        json_decref(out);
        json_decref(o);
    }
    return NULL;
}

static void test_one_client_serves_many_threads(void **state)
{
    fixture *f = *state;
    hammer h[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        h[i] = (hammer){.f = f, .id = i};
        pthread_create(&th[i], NULL, hammer_main, &h[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(h[i].failures, 0);
    }
    fl_list_result l;
    assert_int_equal(fl_client_list(f->c, &CM, "default", NULL, &l, NULL), 0);
    assert_int_equal(json_array_size(l.items), 200);
    fl_list_result_close(&l);
}

/* A resource list handed over by a caller answers resolve without a request: the kind is
 * not served by this server at all, so only the learned entry can name it. */
static void test_resolve_uses_learned_discovery_without_asking(void **state)
{
    fixture *f = *state;
    json_error_t je;
    json_t *res = json_loads("[{\"name\":\"gizmos\",\"kind\":\"Gizmo\",\"namespaced\":true},"
                             "{\"name\":\"gizmos/status\",\"kind\":\"Gizmo\",\"namespaced\":true},"
                             "{\"name\":\"gadgetsets\",\"kind\":\"GadgetSet\",\"namespaced\":false},"
                             "{\"kind\":\"NoName\"}]",
                             0, &je);
    assert_non_null(res);
    fl_client_discovery_learn(f->c, "learned.example.com/v1", res);
    json_decref(res);
    char *r = NULL;
    bool namespaced = false;
    fl_client_error err;
    assert_int_equal(fl_client_resolve(f->c, "learned.example.com/v1", "Gizmo", &r, &namespaced, &err), 0);
    assert_string_equal(r, "gizmos");
    assert_true(namespaced);
    free(r);
    assert_int_equal(fl_client_resolve(f->c, "learned.example.com/v1", "GadgetSet", &r, &namespaced, &err), 0);
    assert_string_equal(r, "gadgetsets");
    assert_false(namespaced);
    free(r);
    /* a prefix of a kind is not the kind; an unknown kind asks the server, which 404s */
    assert_int_equal(fl_client_resolve(f->c, "learned.example.com/v1", "Gadget", &r, &namespaced, &err),
                     FL_ENOTFOUND);
    assert_null(r);
}

static void test_resolve_finds_kinds_through_discovery_including_new_crds(void **state)
{
    fixture *f = *state;
    char *res = NULL;
    bool namespaced = false;
    fl_client_error err;
    assert_int_equal(fl_client_resolve(f->c, "v1", "ConfigMap", &res, &namespaced, &err), 0);
    assert_string_equal(res, "configmaps");
    assert_true(namespaced);
    free(res);
    assert_int_equal(fl_client_resolve(f->c, "v1", "Namespace", &res, &namespaced, &err), 0);
    assert_string_equal(res, "namespaces");
    assert_false(namespaced);
    free(res);
    assert_int_equal(fl_client_resolve(f->c, "apps/v1", "Deployment", &res, &namespaced, &err), 0);
    assert_string_equal(res, "deployments");
    free(res);
    assert_int_equal(fl_client_resolve(f->c, "v1", "Gadget", &res, &namespaced, &err), FL_ENOTFOUND);
    assert_null(res);
    assert_int_equal(fl_client_resolve(f->c, "example.com/v1", "Widget", &res, &namespaced, &err), FL_ENOTFOUND);

    /* a CRD created after the first lookups is found on the next one */
    const char *crd = "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
                      "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
                      "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\",\"listKind\":"
                      "\"WidgetList\"},\"scope\":\"Cluster\",\"versions\":[{\"name\":\"v1\",\"served\":true,"
                      "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
                      "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";
    json_error_t je;
    json_t *crd_obj = json_loads(crd, 0, &je), *out = NULL;
    assert_int_equal(fl_client_create(f->c, &(fl_gvr){"apiextensions.k8s.io/v1", "customresourcedefinitions"}, NULL,
                                      crd_obj, NULL, &out, &err),
                     0);
    json_decref(crd_obj);
    json_decref(out);
    assert_int_equal(fl_client_resolve(f->c, "example.com/v1", "Widget", &res, &namespaced, &err), 0);
    assert_string_equal(res, "widgets");
    assert_false(namespaced);
    free(res);
}

/* ---- several servers: a control plane's replicas ---- */

/* A loopback port nobody listens on: connecting to it is refused. */
static int refused_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    close(fd); /* never listened on: refused from now on */
    return ntohs(sa.sin_port);
}

/* A client for the servers on ports a then b (in that order), with token "t". urls gets
 * their URLs. */
static fl_client *client_at_both(int a, int b, char urls[2][64])
{
    snprintf(urls[0], 64, "http://127.0.0.1:%d", a);
    snprintf(urls[1], 64, "http://127.0.0.1:%d", b);
    const char *servers[] = {urls[0], urls[1], NULL};
    fl_kubeconfig kc;
    fl_kubeconfig_init(&kc, "http://127.0.0.1:1", "t"); /* its server is replaced by the list */
    fl_client *c = NULL;
    assert_int_equal(fl_client_new(&kc, &(fl_client_options){.servers = servers}, &c, NULL), 0);
    fl_kubeconfig_close(&kc);
    return c;
}

static void test_client_moves_to_the_next_server_when_one_refuses(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    char urls[2][64];
    fl_client *c = client_at_both(refused_port(), f->port, urls);
    assert_string_equal(fl_client_server(c), urls[0]);
    json_t *obj = NULL;
    fl_client_error err;
    assert_int_equal(fl_client_get(c, &CM, "default", "a", &obj, &err), 0);
    assert_string_equal(data_k(obj), "1");
    json_decref(obj);
    /* it stays with the one that answered */
    assert_string_equal(fl_client_server(c), urls[1]);
    obj = configmap("b", "2");
    assert_int_equal(fl_client_create(c, &CM, "default", obj, NULL, NULL, &err), 0);
    json_decref(obj);
    assert_string_equal(fl_client_server(c), urls[1]);
    fl_client_free(c);
}

static void test_client_leaves_a_replica_that_goes_away_and_resends_nothing_sent(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    proxy *px = proxy_start(f->port);
    char urls[2][64];
    fl_client *c = client_at_both(px->port, f->port, urls);
    json_t *obj = NULL;
    fl_client_error err;
    assert_int_equal(fl_client_get(c, &CM, "default", "a", &obj, &err), 0);
    json_decref(obj);
    assert_string_equal(fl_client_server(c), urls[0]); /* the first answered */

    /* a replica that takes the request and dies with it: the request was sent, and is not
     * sent again elsewhere (a write could have been done); the client stays */
    atomic_store(&px->down, true);
    sleep_ms(50);
    obj = configmap("b", "1");
    int rc = fl_client_create(c, &CM, "default", obj, NULL, NULL, &err);
    json_decref(obj);
    assert_int_equal(rc, FL_EIO);
    assert_true(err.transport);
    assert_string_equal(fl_client_server(c), urls[0]);

    /* the replica is gone (its port refuses, its kept connection is dead): the next one */
    proxy_stop(px);
    assert_int_equal(fl_client_get(c, &CM, "default", "a", &obj, &err), 0);
    json_decref(obj);
    assert_string_equal(fl_client_server(c), urls[1]);
    /* both gone: the transport error of the last one tried */
    fl_http_stop(f->http);
    f->http = NULL;
    assert_int_equal(fl_client_get(c, &CM, "default", "a", &obj, &err), FL_EIO);
    assert_true(err.transport);
    assert_null(obj);
    fl_client_free(c);
}

static void test_https_with_the_kubeconfig_the_server_writes(void **state)
{
    fixture *f = *state;
    /* a second, TLS listener with the PKI `flotilla server` creates, and its kubeconfig */
    fl_pki pki;
    char *err = NULL;
    assert_int_equal(fl_pki_ensure(f->dir, NULL, &pki, &err), 0);
    fl_http_config hc = {.listen = "127.0.0.1:0", .cert_pem = pki.server_cert_pem, .key_pem = pki.server_key_pem,
                         .token = pki.admin_token};
    fl_http *tls = NULL;
    assert_int_equal(fl_http_start(&hc, &f->api, &tls, &err), 0);
    char *url = fl_asprintf("https://localhost:%d", fl_http_port(tls));
    char *path = fl_asprintf("%s/kubeconfig", f->dir);
    assert_int_equal(fl_kubeconfig_write(path, url, pki.ca_cert_pem, pki.admin_token), 0);

    fl_kubeconfig kc;
    assert_int_equal(fl_kubeconfig_load(path, NULL, &kc, &err), 0);
    fl_client *c = NULL;
    assert_int_equal(fl_client_new(&kc, NULL, &c, &err), 0);
    fl_client_error e;
    json_t *obj = configmap("secure", "v"), *out = NULL;
    assert_int_equal(fl_client_create(c, &CM, "default", obj, NULL, &out, &e), 0);
    json_decref(out);
    assert_int_equal(fl_client_get(c, &CM, "default", "secure", &out, &e), 0);
    json_decref(out);
    fl_client_free(c);

    /* trusting another CA fails the handshake: a transport error, not an HTTP status */
    char *other_dir = fl_asprintf("%s/other", f->dir);
    fl_pki other;
    assert_int_equal(fl_pki_ensure(other_dir, NULL, &other, &err), 0);
    free(kc.ca_pem);
    kc.ca_pem = fl_strdup(other.ca_cert_pem);
    assert_int_equal(fl_client_new(&kc, NULL, &c, &err), 0);
    assert_int_equal(fl_client_get(c, &CM, "default", "secure", &out, &e), FL_EIO);
    assert_int_equal(e.http, 0);
    assert_non_null(strstr(e.message, "certificate"));
    fl_client_free(c);
    fl_pki_close(&other);
    free(other_dir);

    /* insecure-skip-tls-verify talks to it anyway; without the token it is refused */
    free(kc.ca_pem);
    kc.ca_pem = NULL;
    kc.insecure = true;
    free(kc.token);
    kc.token = NULL;
    assert_int_equal(fl_client_new(&kc, NULL, &c, &err), 0);
    assert_int_equal(fl_client_get(c, &CM, "default", "secure", &out, &e), FL_EINVAL);
    assert_int_equal(e.http, 401);
    fl_client_free(c);

    fl_kubeconfig_close(&kc);
    json_decref(obj);
    free(url);
    free(path);
    fl_http_stop(tls);
    f->api.stopping = 0;
    fl_pki_close(&pki);
}

/* ---- watch ---- */

typedef struct watcher {
    fixture *f;
    fl_client_cancel *cancel;
    fl_watch_opts opts;
    const char *ns;
    rec log;
    int stop_after;        /* return false after this many events (0 = never) */
    atomic_int count;
    int rc;
    fl_client_error err;
    atomic_bool done;
    int64_t ended_ms;
} watcher;

static bool watch_fn(void *ctx, int type, json_t *obj, fl_blob *text)
{
    watcher *w = ctx;
    static const char *names[] = {"?", "ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (type == FL_WATCH_BOOKMARK)
        rec_add(&w->log, fl_strdup("BOOKMARK"));
    else
        rec_add(&w->log, fl_asprintf("%s %s %s", names[type], name ? name : "?", data_k(obj) ? data_k(obj) : "-"));
    int n = atomic_fetch_add(&w->count, 1) + 1;
    return !(w->stop_after && n >= w->stop_after);
}

static void *watch_main(void *arg)
{
    watcher *w = arg;
    w->rc = fl_client_watch(w->f->c, &CM, w->ns, &w->opts, watch_fn, w, w->cancel, &w->err);
    w->ended_ms = now_ms();
    atomic_store(&w->done, true);
    return NULL;
}

static void watcher_start(watcher *w, fixture *f, pthread_t *th)
{
    w->f = f;
    w->cancel = fl_client_cancel_new();
    rec_init(&w->log);
    pthread_create(th, NULL, watch_main, w);
}

static void watcher_close(watcher *w)
{
    rec_close(&w->log);
    fl_client_cancel_free(w->cancel);
}

static void test_watch_delivers_changes_in_order_and_stops_on_cancel(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "before", "0");
    fl_list_result l;
    assert_int_equal(fl_client_list(f->c, &CM, "default", NULL, &l, NULL), 0);
    watcher w = {.ns = "default"};
    w.opts.resource_version = l.resource_version;
    pthread_t th;
    watcher_start(&w, f, &th);
    sleep_ms(100); /* changes after the list's revision arrive either way; this just lets the watch open */
    create_cm(f, "default", "w", "1");
    patch_cm(f, "default", "w", "2");
    patch_cm(f, "default", "w", "3");
    create_cm(f, "other", "not-in-namespace", "x");
    delete_cm(f, "default", "w");
    WAIT_UNTIL(rec_count(&w.log) >= 4, 5000);
    sleep_ms(50);
    assert_int_equal(rec_count(&w.log), 4);
    assert_string_equal(w.log.ev[0], "ADDED w 1");
    assert_string_equal(w.log.ev[1], "MODIFIED w 2");
    assert_string_equal(w.log.ev[2], "MODIFIED w 3");
    assert_string_equal(w.log.ev[3], "DELETED w 3");
    assert_false(atomic_load(&w.done));

    int64_t t0 = now_ms();
    fl_client_cancel_fire(w.cancel);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, FL_ECLOSED);
    assert_true(w.ended_ms - t0 < 500); /* at once, not at the next poll timeout */
    watcher_close(&w);
    fl_list_result_close(&l);
}

static void label_cm(fixture *f, const char *name, const char *tier)
{
    char *p = fl_asprintf("{\"metadata\":{\"labels\":{\"tier\":\"%s\"}}}", tier);
    fl_client_error err;
    int rc = fl_client_patch(f->c, &CM, "default", name, FL_PATCH_MERGE, p, strlen(p), NULL, NULL, &err);
    if (rc)
        fail_msg("label %s: %d %s", name, rc, err.message);
    free(p);
}

/* A label-selector watch reports an object that starts matching as ADDED and one that stops
 * matching as DELETED, as the Kubernetes watch cache does, including objects that matched
 * before the watch began (resumed from a resourceVersion), among many that do not. */
static void test_selector_watch_turns_matching_changes_into_adds_and_deletes(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "old", "0");
    label_cm(f, "old", "web");
    for (int i = 0; i < 300; i++) { /* others: the watch learns which keys match among these */
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        create_cm(f, "default", name, "0");
        label_cm(f, name, i % 2 ? "web" : "db");
    }
    fl_list_result l;
    assert_int_equal(fl_client_list(f->c, &CM, "default", NULL, &l, NULL), 0);
    watcher w = {.ns = "default"};
    w.opts.resource_version = l.resource_version;
    w.opts.label_selector = "tier=web";
    pthread_t th;
    watcher_start(&w, f, &th);
    sleep_ms(100);
    label_cm(f, "old", "db");  /* matched before the watch: now it does not */
    create_cm(f, "default", "a", "1");
    label_cm(f, "a", "web");   /* starts matching */
    patch_cm(f, "default", "a", "2");
    label_cm(f, "a", "db");    /* stops */
    label_cm(f, "a", "web");   /* and again */
    label_cm(f, "x0", "db");   /* never matched: nothing */
    delete_cm(f, "default", "a");
    label_cm(f, "x1", "db");   /* matched before the watch, among many */
    WAIT_UNTIL(rec_count(&w.log) >= 7, 5000);
    sleep_ms(50);
    if (rec_count(&w.log) != 7)
        rec_dump(&w.log);
    assert_int_equal(rec_count(&w.log), 7);
    assert_string_equal(w.log.ev[0], "DELETED old 0");
    assert_string_equal(w.log.ev[1], "ADDED a 1");
    assert_string_equal(w.log.ev[2], "MODIFIED a 2");
    assert_string_equal(w.log.ev[3], "DELETED a 2");
    assert_string_equal(w.log.ev[4], "ADDED a 2");
    assert_string_equal(w.log.ev[5], "DELETED a 2");
    assert_string_equal(w.log.ev[6], "DELETED x1 0");
    fl_client_cancel_fire(w.cancel);
    pthread_join(th, NULL);
    watcher_close(&w);
    fl_list_result_close(&l);
}

static void test_watch_without_resource_version_starts_with_current_objects(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    create_cm(f, "default", "b", "1");
    watcher w = {.ns = "default", .stop_after = 3};
    pthread_t th;
    watcher_start(&w, f, &th);
    WAIT_UNTIL(rec_count(&w.log) >= 2, 5000);
    create_cm(f, "default", "c", "1");
    pthread_join(th, NULL); /* the callback ends it after the third event */
    assert_int_equal(w.rc, 0);
    assert_string_equal(w.log.ev[0], "ADDED a 1");
    assert_string_equal(w.log.ev[1], "ADDED b 1");
    assert_string_equal(w.log.ev[2], "ADDED c 1");
    watcher_close(&w);
}

static void test_watch_gets_bookmarks_and_ends_at_the_server_timeout(void **state)
{
    fixture *f = *state;
    f->api.bookmark_interval_ms = 100;
    char rv[32];
    snprintf(rv, sizeof rv, "%lld", (long long)fl_store_rev(f->store));
    watcher w = {.ns = "default"};
    w.opts = (fl_watch_opts){.resource_version = rv, .allow_bookmarks = true, .timeout_seconds = 1};
    pthread_t th;
    int64_t t0 = now_ms();
    watcher_start(&w, f, &th);
    WAIT_UNTIL(atomic_load(&w.done), 5000);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0); /* a clean end */
    assert_true(w.ended_ms - t0 >= 900);
    assert_true(rec_has(&w.log, "BOOKMARK"));
    watcher_close(&w);
}

static void test_watch_from_a_compacted_revision_is_expired(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "x", "0");
    char rv[32];
    snprintf(rv, sizeof rv, "%lld", (long long)fl_store_rev(f->store));
    for (int i = 1; i <= 10; i++) {
        char v[8];
        snprintf(v, sizeof v, "%d", i);
        patch_cm(f, "default", "x", v);
    }
    assert_true(fl_store_compact(f->store) > atoll(rv));
    watcher w = {.ns = "default"};
    w.opts.resource_version = rv;
    pthread_t th;
    watcher_start(&w, f, &th);
    WAIT_UNTIL(atomic_load(&w.done), 5000);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, FL_EEXPIRED);
    assert_int_equal(w.err.http, 410);
    assert_string_equal(w.err.reason, "Expired");
    assert_int_equal(rec_count(&w.log), 0); /* ERROR events are not passed on */
    watcher_close(&w);
}

static void test_cancel_before_the_watch_starts_returns_at_once(void **state)
{
    fixture *f = *state;
    fl_client_cancel *k = fl_client_cancel_new();
    fl_client_cancel_fire(k);
    assert_true(fl_client_cancel_sleep(k, 10000)); /* returns at once */
    fl_client_error err;
    assert_int_equal(fl_client_watch(f->c, &CM, "default", NULL, watch_fn, NULL, k, &err), FL_ECLOSED);
    fl_client_cancel_reset(k);
    assert_false(fl_client_cancel_fired(k));
    assert_false(fl_client_cancel_sleep(k, 10));
    fl_client_cancel_free(k);
}

/* ---- informer ---- */

typedef struct inf_log {
    rec r;
    fl_informer *inf;
    atomic_int cache_misses;   /* handler could not see its object in the cache */
    atomic_int listed_ok, listed_failed; /* on_listed calls */
    const char *probe_key;     /* NULL, or a key whose absence from the cache adds count */
    atomic_int probe_absent;   /* adds told while probe_key was not in the cache yet */
    atomic_int unsynced_adds;  /* adds told before the informer had synced */
} inf_log;

static char *key_rv_data(const json_t *obj)
{
    char *key = fl_informer_key(obj);
    char *s = fl_asprintf("%s=%s", key, data_k(obj) ? data_k(obj) : "-");
    free(key);
    return s;
}

static void on_add(void *ctx, json_t *obj)
{
    inf_log *l = ctx;
    char *kd = key_rv_data(obj);
    rec_add(&l->r, fl_asprintf("add %s", kd));
    free(kd);
    /* the cache already holds the object a handler is told about */
    char *key = fl_informer_key(obj);
    json_t *cached = NULL;
    if (fl_informer_get_key(l->inf, key, &cached) != 0)
        atomic_fetch_add(&l->cache_misses, 1);
    json_decref(cached);
    free(key);
    if (!fl_informer_has_synced(l->inf))
        atomic_fetch_add(&l->unsynced_adds, 1);
    json_t *probe = NULL;
    if (l->probe_key && fl_informer_get_key(l->inf, l->probe_key, &probe) != 0)
        atomic_fetch_add(&l->probe_absent, 1);
    json_decref(probe);
}

static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    inf_log *l = ctx;
    char *a = key_rv_data(old_obj), *b = key_rv_data(new_obj);
    rec_add(&l->r, fl_asprintf("update %s -> %s", a, b));
    free(a);
    free(b);
}

static void on_delete(void *ctx, json_t *obj)
{
    inf_log *l = ctx;
    char *kd = key_rv_data(obj);
    rec_add(&l->r, fl_asprintf("delete %s", kd));
    free(kd);
    char *key = fl_informer_key(obj);
    json_t *cached = NULL;
    if (fl_informer_get_key(l->inf, key, &cached) == 0)
        atomic_fetch_add(&l->cache_misses, 1); /* should be gone already */
    json_decref(cached);
    free(key);
}

static void on_listed(void *ctx, int rc)
{
    inf_log *l = ctx;
    if (rc == 0 && !fl_informer_has_synced(l->inf))
        atomic_fetch_add(&l->cache_misses, 1); /* told before the informer says it has synced */
    atomic_fetch_add(rc == 0 ? &l->listed_ok : &l->listed_failed, 1);
}

static void append_key_data(void *ctx, json_t *obj)
{
    char *kd = key_rv_data(obj);
    json_array_append_new(ctx, json_string(kd));
    free(kd);
}

static fl_informer *informer_resuming(fl_client *c, inf_log *l, const char *ns, int watch_timeout_s,
                                      bool silent_first, int64_t resume_rev, const char *watch_from)
{
    rec_init(&l->r);
    atomic_store(&l->cache_misses, 0);
    atomic_store(&l->listed_ok, 0);
    atomic_store(&l->listed_failed, 0);
    l->probe_key = NULL;
    atomic_store(&l->probe_absent, 0);
    atomic_store(&l->unsynced_adds, 0);
    fl_informer_config cfg = {.client = c, .resource = CM, .ns = ns, .page_size = 2, .backoff_min_ms = 20,
                              .backoff_max_ms = 200, .watch_timeout_s = watch_timeout_s,
                              .handlers = {.on_add = on_add,
                                           .on_update = on_update,
                                           .on_delete = on_delete,
                                           .on_listed = on_listed,
                                           .ctx = l},
                              .transform = fl_informer_drop_managed_fields,
                              .compact = compact_informers, .hot_objects = 1,
                              .silent_first_list = silent_first,
                              .resume_rev = resume_rev,
                              .watch_from = watch_from};
    fl_informer *inf = NULL;
    assert_int_equal(fl_informer_new(&cfg, &inf), 0);
    l->inf = inf;
    return inf;
}

static fl_informer *informer_with(fl_client *c, inf_log *l, const char *ns, int watch_timeout_s, bool silent_first)
{
    return informer_resuming(c, l, ns, watch_timeout_s, silent_first, 0, NULL);
}

static fl_informer *informer_via(fl_client *c, inf_log *l, const char *ns, int watch_timeout_s)
{
    return informer_with(c, l, ns, watch_timeout_s, false);
}

static fl_informer *informer_for(fixture *f, inf_log *l, const char *ns, int watch_timeout_s)
{
    return informer_via(f->c, l, ns, watch_timeout_s);
}

/* The cache must equal what the server lists now. */
static void assert_cache_matches_server(fixture *f, fl_informer *inf, const char *ns)
{
    fl_list_result l;
    assert_int_equal(fl_client_list_all(f->c, &CM, ns, NULL, NULL, &l, NULL), 0);
    json_t *cached = fl_informer_list(inf, ns);
    assert_int_equal(json_array_size(cached), json_array_size(l.items));
    for (size_t i = 0; i < json_array_size(l.items); i++) {
        json_t *a = json_array_get(l.items, i), *b = json_array_get(cached, i);
        assert_string_equal(fl_client_object_rv(a), fl_client_object_rv(b));
        char *ka = fl_informer_key(a), *kb = fl_informer_key(b);
        assert_string_equal(ka, kb);
        free(ka);
        free(kb);
        /* the whole object, as the informer's transform leaves it (a compact informer over
         * HTTP keeps the listed bytes with managedFields cut out) */
        assert_non_null(json_object_get(json_object_get(a, "metadata"), "managedFields"));
        fl_informer_drop_managed_fields(a);
        assert_true(json_equal(a, b));
    }
    json_decref(cached);
    fl_list_result_close(&l);
}

/* In process, a list's item decoded for the answer leaves out what the caller skips; one the
 * server holds decoded already (written moments ago) comes whole. */
static void test_in_process_lists_skip_fields_of_items_decoded_for_them(void **state)
{
    (void)state;
    const char *text = "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"m\"}]},\"data\":{}}";
    fl_blob *b = fl_blob_new(text, strlen(text));
    json_t *skipped = fl_api_decoded_skipping(b, fl_informer_skip_managed_fields);
    assert_non_null(skipped);
    assert_null(json_object_get(json_object_get(skipped, "metadata"), "managedFields"));
    assert_non_null(json_object_get(skipped, "data"));
    json_t *whole = fl_api_decoded_skipping(b, NULL);
    assert_non_null(json_object_get(json_object_get(whole, "metadata"), "managedFields"));
    fl_api_kept was = fl_api_decoded_keep(b, whole);
    fl_api_kept_release(&was);
    json_t *kept = fl_api_decoded_skipping(b, fl_informer_skip_managed_fields);
    assert_ptr_equal(kept, whole);
    json_decref(kept);
    /* never with the members skipped: a view of the kept object without them */
    json_t *without = fl_api_decoded_without(b, fl_informer_skip_managed_fields);
    assert_ptr_not_equal(without, whole);
    assert_null(json_object_get(json_object_get(without, "metadata"), "managedFields"));
    assert_ptr_equal(json_object_get(without, "data"), json_object_get(whole, "data"));
    assert_non_null(json_object_get(json_object_get(whole, "metadata"), "managedFields"));
    json_decref(without);
    /* keeping another decoding hands the one it replaced back, for the caller to release */
    json_t *again = json_deep_copy(whole);
    was = fl_api_decoded_keep(b, again);
    assert_ptr_equal(was.obj, whole);
    assert_ptr_equal(was.blob, b);
    fl_api_kept_release(&was);
    assert_null(was.obj);
    /* a server at rest lets go of them: the next read decodes again */
    assert_int_equal(again->refcount, 2);
    fl_api_decoded_forget();
    assert_int_equal(again->refcount, 1);
    json_t *fresh = fl_api_decoded(b);
    assert_ptr_not_equal(fresh, again);
    assert_true(json_equal(fresh, again));
    json_decref(fresh);
    json_decref(again);
    json_decref(whole);
    json_decref(skipped);
    fl_blob_unref(b);
}

/* The data a cache of this informer holds of default/name: "1" or "2" as the object has
 * it, "-" without its data; and whether the read said where the rest is */
static const char *partial_data(fl_informer *inf, const char *name, bool *with_text)
{
    char *key = fl_cat("default/", name, NULL);
    json_t *obj = NULL;
    fl_informer_src src;
    assert_int_equal(fl_informer_get_partial(inf, key, &obj, &src), 0);
    free(key);
    *with_text = fl_informer_src_partial(&src);
    static char d[8];
    snprintf(d, sizeof d, "%s", json_object_get(obj, "data") ? data_k(obj) : "-");
    json_decref(obj);
    fl_informer_src_close(&src);
    return d;
}

/* updates whose new object came with its data (in process, the cache then holds less) */
static atomic_int whole_updates;

static void note_whole_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)ctx;
    (void)old_obj;
    if (json_object_get(new_obj, "data"))
        atomic_fetch_add(&whole_updates, 1);
}

/* The same object read from the cache twice, with another read in between (the hot slot of
 * a compact informer with one slot then holds the other): whether both reads gave the same
 * decoding, and each lacked data (in process) or had it (over HTTP). */
static bool read_twice_same(fixture *f, fl_informer *inf, const char *key, const char *other)
{
    json_t *first = NULL, *between = NULL, *again = NULL;
    assert_int_equal(fl_informer_get_key(inf, key, &first), 0);
    assert_int_equal(fl_informer_get_key(inf, other, &between), 0);
    assert_int_equal(fl_informer_get_key(inf, key, &again), 0);
    assert_string_equal(fl_client_object_rv(first), fl_client_object_rv(again));
    assert_int_equal(json_object_get(again, "data") != NULL, !f->local);
    bool same = first == again;
    json_decref(first);
    json_decref(between);
    json_decref(again);
    return same;
}

static void partial_informer_reads(fixture *f, bool compact)
{
    create_cm(f, "default", "a", "1");
    create_cm(f, "default", "b", "1");
    static const char *const partial[] = {"data", NULL};
    atomic_store(&whole_updates, 0);
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default",
                              .transform = fl_informer_drop_managed_fields, .partial_fields = partial,
                              .compact = compact, .hot_objects = 1,
                              .handlers = {.on_update = note_whole_update}};
    fl_informer *inf = NULL;
    assert_int_equal(fl_informer_new(&cfg, &inf), 0);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);

    /* in process, the list leaves data in the stored value; over HTTP it is all decoded */
    bool text = false;
    assert_string_equal(partial_data(inf, "a", &text), f->local ? "-" : "1");
    assert_int_equal(text, f->local);
    json_t *obj = NULL, *whole = NULL;
    fl_informer_src stored;
    assert_int_equal(fl_informer_get_partial(inf, "default/a", &obj, &stored), 0);
    whole = fl_informer_whole(inf, obj, &stored);
    assert_string_equal(data_k(whole), "1");
    assert_string_equal(fl_client_object_rv(whole), fl_client_object_rv(obj));
    assert_null(json_object_get(json_object_get(whole, "metadata"), "managedFields")); /* transformed */
    assert_true(f->local ? whole != obj : whole == obj);
    json_decref(whole);
    json_decref(obj);
    fl_informer_src_close(&stored);
    assert_int_equal(fl_informer_get_whole(inf, "default/b", &whole), 0);
    assert_string_equal(data_k(whole), "1");
    json_decref(whole);
    assert_int_equal(fl_informer_get_whole(inf, "default/none", &whole), FL_ENOTFOUND);
    assert_null(whole);

    /* what a watch brings is cached the same way; its handlers had it whole */
    patch_cm(f, "default", "b", "2");
    WAIT_UNTIL(atomic_load(&whole_updates) == 1, 5000);
    char rv[32] = "";
    assert_int_equal(fl_informer_get_whole(inf, "default/b", &whole), 0);
    assert_string_equal(data_k(whole), "2");
    snprintf(rv, sizeof rv, "%s", fl_client_object_rv(whole));
    json_decref(whole);
    assert_string_equal(partial_data(inf, "b", &text), f->local ? "-" : "2");
    assert_int_equal(text, f->local);
    assert_int_equal(fl_informer_get_partial(inf, "default/b", &obj, &stored), 0);
    assert_string_equal(fl_client_object_rv(obj), rv);
    whole = fl_informer_whole(inf, obj, &stored);
    assert_string_equal(data_k(whole), "2");
    assert_string_equal(fl_client_object_rv(whole), rv);
    json_decref(whole);
    json_decref(obj);
    fl_informer_src_close(&stored);
    assert_string_equal(partial_data(inf, "a", &text), f->local ? "-" : "1");
    /* compact: in process a listed object keeps its decoding, a watched one only its stored
     * value, decoded at each read that finds its hot slot taken; over HTTP both are texts */
    create_cm(f, "default", "c", "1");
    patch_cm(f, "default", "c", "2");
    WAIT_UNTIL(atomic_load(&whole_updates) == 2, 5000);
    assert_int_equal(read_twice_same(f, inf, "default/a", "default/b"), !compact || f->local);
    assert_int_equal(read_twice_same(f, inf, "default/b", "default/c"), !compact);
    fl_informer_free(inf);
}

static void test_informer_lists_partial_objects_and_reads_them_whole(void **state)
{
    partial_informer_reads(*state, false);
}

static void test_compact_informer_keeps_watched_partial_objects_as_stored_values(void **state)
{
    partial_informer_reads(*state, true);
}

static void test_informer_syncs_then_sees_adds_updates_and_deletes(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    create_cm(f, "default", "b", "1");
    create_cm(f, "default", "c", "1");
    create_cm(f, "other", "x", "1");
    inf_log l;
    fl_informer *inf = informer_for(f, &l, NULL, 0);
    assert_false(fl_informer_has_synced(inf));
    int64_t before = fl_time_mono_ms();
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_start(inf), FL_EINVAL);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    assert_true(fl_informer_has_synced(inf));
    /* the list's end is told once, after synced; its pages moved the list's progress */
    WAIT_UNTIL(atomic_load(&l.listed_ok) == 1, 5000);
    assert_int_equal(atomic_load(&l.listed_failed), 0);
    assert_true(fl_informer_list_progress_ms(inf) >= before);
    assert_true(fl_informer_list_progress_ms(inf) <= fl_time_mono_ms());
    /* the initial adds were delivered before synced (pages of 2: 2 pages) */
    assert_int_equal(rec_count(&l.r), 4);
    assert_true(rec_has(&l.r, "add default/a=1"));
    assert_true(rec_has(&l.r, "add other/x=1"));

    json_t *all = fl_informer_list(inf, NULL), *def = fl_informer_list(inf, "default"), *one = NULL;
    assert_int_equal(json_array_size(all), 4);
    assert_int_equal(json_array_size(def), 3);
    json_t *walked = json_array(); /* the walk sees what the list holds, in the same order */
    fl_informer_each(inf, NULL, append_key_data, walked);
    assert_int_equal(json_array_size(walked), 4);
    for (size_t i = 0; i < 4; i++) {
        char *kd = key_rv_data(json_array_get(all, i));
        assert_string_equal(json_string_value(json_array_get(walked, i)), kd);
        free(kd);
    }
    json_array_clear(walked);
    fl_informer_each(inf, "default", append_key_data, walked);
    assert_int_equal(json_array_size(walked), 3);
    json_decref(walked);
    json_decref(all);
    json_decref(def);
    assert_int_equal(fl_informer_get(inf, "other", "x", &one), 0);
    assert_string_equal(data_k(one), "1");
    assert_non_null(json_object_get(one, "data"));
    assert_null(json_object_get(json_object_get(one, "metadata"), "managedFields")); /* transformed */
    json_decref(one);
    assert_int_equal(fl_informer_get(inf, "default", "x", &one), FL_ENOTFOUND);
    assert_null(one);

    create_cm(f, "default", "d", "1");
    patch_cm(f, "default", "a", "2");
    delete_cm(f, "default", "b");
    WAIT_UNTIL(rec_count(&l.r) >= 7, 5000);
    assert_true(rec_has(&l.r, "add default/d=1"));
    assert_true(rec_has(&l.r, "update default/a=1 -> default/a=2"));
    assert_true(rec_has(&l.r, "delete default/b=1"));
    assert_int_equal(atomic_load(&l.cache_misses), 0);
    assert_int_equal(fl_informer_get(inf, "default", "b", &one), FL_ENOTFOUND);
    assert_int_equal(fl_informer_get(inf, "default", "a", &one), 0);
    assert_string_equal(data_k(one), "2");
    json_decref(one);
    assert_cache_matches_server(f, inf, NULL);

    int64_t t0 = now_ms();
    fl_informer_stop(inf);
    assert_true(now_ms() - t0 < 1000);
    fl_informer_stop(inf); /* idempotent */
    int n = rec_count(&l.r);
    create_cm(f, "default", "after-stop", "1");
    sleep_ms(100);
    assert_int_equal(rec_count(&l.r), n); /* no handler runs after stop */
    fl_informer_free(inf);
    rec_close(&l.r);
}

/* Handlers that read only the new object: the old one is not decoded for them. */
static void on_update_new_only(void *ctx, json_t *old_obj, json_t *new_obj)
{
    inf_log *l = ctx;
    char *b = key_rv_data(new_obj);
    rec_add(&l->r, fl_asprintf("update %s -> %s", old_obj ? "old" : "(none)", b));
    free(b);
}

/* The first list's adds are told as its pages come, before the list is over: over HTTP
 * page by page, and in process, where a list is one answer, as the server decodes it. */
/* on_page: each item's name, once its data is checked */
static void note_names(void *ctx, json_t *items, fl_blob *const *texts)
{
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        json_t *obj = texts ? fl_json_load(texts[i]->data, texts[i]->len) : json_incref(item);
        assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "data"), "k")), "1");
        json_array_append(ctx, json_object_get(json_object_get(obj, "metadata"), "name"));
        json_decref(obj);
    }
}

static void test_informer_tells_first_list_adds_before_the_list_ends(void **state)
{
    fixture *f = *state;
    enum { N = 600 };
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "cm-%03d", i);
        create_cm(f, "default", name, "1");
    }
    /* handed over in order, whole: in process each chunk of 256 is decoded on two threads */
    json_t *names = json_array();
    fl_list_opts po = {.on_page = note_names, .page_ctx = names, .take_pages = true};
    fl_list_result all;
    assert_int_equal(fl_client_list_all(f->c, &CM, "default", &po, NULL, &all, NULL), 0);
    fl_list_result_close(&all);
    assert_int_equal(json_array_size(names), N);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "cm-%03d", i);
        assert_string_equal(json_string_value(json_array_get(names, i)), name);
    }
    json_decref(names);

    inf_log l;
    fl_informer *inf = informer_for(f, &l, "default", 0);
    l.probe_key = "default/cm-599"; /* the list's last */
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 10000), 0);
    WAIT_UNTIL(atomic_load(&l.listed_ok) == 1, 5000);
    assert_int_equal(rec_count(&l.r), N);
    assert_true(rec_has(&l.r, "add default/cm-000=1"));
    assert_true(rec_has(&l.r, "add default/cm-599=1"));
    assert_int_equal(atomic_load(&l.unsynced_adds), N);
    assert_true(atomic_load(&l.probe_absent) >= 256);
    assert_int_equal(atomic_load(&l.cache_misses), 0);
    assert_cache_matches_server(f, inf, "default");
    /* and after it, the watch */
    patch_cm(f, "default", "cm-599", "2");
    WAIT_UNTIL(rec_has(&l.r, "update default/cm-599=1 -> default/cm-599=2"), 5000);
    fl_informer_free(inf);
    rec_close(&l.r);
}

/* An informer made from cfg, started and synced; it is l's. */
static fl_informer *synced_informer(const fl_informer_config *cfg, inf_log *l)
{
    fl_informer *inf = NULL;
    assert_int_equal(fl_informer_new(cfg, &inf), 0);
    l->inf = inf;
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    return inf;
}

static void test_informer_without_old_objects_still_tells_updates_from_adds(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    inf_log l;
    memset(&l, 0, sizeof l); /* no probe: on_add reads probe_key */
    rec_init(&l.r);
    atomic_store(&l.cache_misses, 0);
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default", .backoff_min_ms = 20,
                              .backoff_max_ms = 200,
                              .handlers = {.on_add = on_add, .on_update = on_update_new_only,
                                           .on_delete = on_delete, .ctx = &l},
                              .compact = compact_informers, .hot_objects = 1, .no_old_objects = true};
    fl_informer *inf = synced_informer(&cfg, &l);
    create_cm(f, "default", "b", "1"); /* b's slot is the hot one now: a's text is cold */
    patch_cm(f, "default", "a", "2");
    delete_cm(f, "default", "a");
    WAIT_UNTIL(rec_count(&l.r) >= 4, 5000);
    assert_int_equal(rec_count(&l.r), 4);
    assert_true(rec_has(&l.r, "add default/a=1"));
    assert_true(rec_has(&l.r, "add default/b=1"));
    assert_true(rec_has(&l.r, "update (none) -> default/a=2"));
    assert_true(rec_has(&l.r, "delete default/a=2"));
    assert_int_equal(atomic_load(&l.cache_misses), 0);
    fl_informer_free(inf);
    rec_close(&l.r);
}

/* What a shed entry keeps here: the name, and a mark that it is what was kept */
static json_t *keep_name(const json_t *obj)
{
    const json_t *md = json_object_get(obj, "metadata");
    return json_pack("{s:{s:O, s:O, s:O, s:{s:s}}}", "metadata", "name", json_object_get(md, "name"), "namespace",
                     json_object_get(md, "namespace"), "resourceVersion", json_object_get(md, "resourceVersion"),
                     "labels", "kept", "yes");
}

/* A compact informer sheds an object at the version its reader recorded: reads answer
 * FL_EEXPIRED and lists leave it out, its version still answers, a handler gets what was
 * kept of it as an update's old object, and the next event caches it whole again. */
static void test_compact_informer_sheds_objects_to_what_it_keeps(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    create_cm(f, "default", "b", "1");
    inf_log l;
    memset(&l, 0, sizeof l);
    rec_init(&l.r);
    atomic_store(&l.cache_misses, 0);
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default", .backoff_min_ms = 20,
                              .backoff_max_ms = 200,
                              .handlers = {.on_update = on_update, .ctx = &l},
                              .transform = fl_informer_drop_managed_fields,
                              .compact = true, .hot_objects = 1, .shed_keep = keep_name};
    fl_informer *inf = synced_informer(&cfg, &l);

    char rv[64], now[64];
    assert_int_equal(fl_informer_get_rv(inf, "default", "a", rv, sizeof rv), 0);
    assert_false(fl_informer_shed(inf, "default", "a", "1")); /* not its version */
    assert_false(fl_informer_shed(inf, "default", "absent", rv));
    json_t *obj = NULL;
    assert_int_equal(fl_informer_get(inf, "default", "a", &obj), 0); /* hot now */
    json_decref(obj);
    assert_true(fl_informer_shed(inf, "default", "a", rv));
    assert_false(fl_informer_shed(inf, "default", "a", rv)); /* shed already */

    obj = json_true();
    assert_int_equal(fl_informer_get(inf, "default", "a", &obj), FL_EEXPIRED);
    assert_null(obj);
    fl_informer_src src;
    assert_int_equal(fl_informer_get_partial(inf, "default/a", &obj, &src), FL_EEXPIRED);
    assert_false(fl_informer_src_partial(&src));
    assert_int_equal(fl_informer_get_whole(inf, "default/a", &obj), FL_EEXPIRED);
    assert_int_equal(fl_informer_get_rv(inf, "default", "a", now, sizeof now), 0);
    assert_string_equal(now, rv);
    json_t *all = fl_informer_list(inf, "default");
    assert_int_equal(json_array_size(all), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(all, 0), "metadata"),
                                                          "name")),
                        "b");
    json_decref(all);
    assert_int_equal(fl_informer_get(inf, "default", "b", &obj), 0); /* the others are untouched */
    assert_string_equal(data_k(obj), "1");
    json_decref(obj);

    patch_cm(f, "default", "a", "2");
    WAIT_UNTIL(rec_count(&l.r) >= 1, 5000);
    assert_true(rec_has(&l.r, "update default/a=- -> default/a=2")); /* the old object: what was kept */
    assert_int_equal(fl_informer_get(inf, "default", "a", &obj), 0);
    assert_string_equal(data_k(obj), "2");
    assert_null(json_object_get(json_object_get(obj, "metadata"), "labels"));
    json_decref(obj);
    fl_informer_free(inf);
    rec_close(&l.r);
}

/* Stop inf (its cache stays, and falls behind the store), write default/name ten times
 * more and compact the store past rv. */
static void stop_and_compact_past(fixture *f, fl_informer *inf, const char *name, const char *rv)
{
    fl_informer_stop(inf);
    for (int i = 100; i < 110; i++) {
        char v[8];
        snprintf(v, sizeof v, "%d", i);
        patch_cm(f, "default", name, v);
    }
    assert_true(fl_store_compact(f->store) > atoll(rv));
}

/* In process, a partial informer keeps of a listed object its decoding without the partial
 * fields, not its stored value: a whole read reads its revision from the store, and once
 * the log no longer has it, says so, while reads of the decoding go on. */
static void test_partial_informer_keeps_no_value_of_listed_objects(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    static const char *const partial[] = {"data", NULL};
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default",
                              .transform = fl_informer_drop_managed_fields, .partial_fields = partial,
                              .compact = true, .hot_objects = 1};
    fl_informer *inf = NULL;
    assert_int_equal(fl_informer_new(&cfg, &inf), 0);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    json_t *obj = NULL;
    assert_int_equal(fl_informer_get_whole(inf, "default/a", &obj), 0);
    assert_string_equal(data_k(obj), "1");
    char rv[64];
    snprintf(rv, sizeof rv, "%s", fl_client_object_rv(obj));
    json_decref(obj);
    stop_and_compact_past(f, inf, "a", rv);
    assert_int_equal(fl_informer_get(inf, "default", "a", &obj), 0);
    assert_null(json_object_get(obj, "data"));
    assert_string_equal(fl_client_object_rv(obj), rv);
    json_decref(obj);
    obj = json_true();
    assert_int_equal(fl_informer_get_whole(inf, "default/a", &obj), FL_EEXPIRED);
    assert_null(obj);
    fl_informer_free(inf);
}

/* At rest every compact informer lets go of its hot decodings; a read decodes again. */
static void test_informers_at_rest_let_go_of_their_hot_decodings(void **state)
{
    fixture *f = *state;
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default", .compact = true, .hot_objects = 8};
    fl_informer *inf = NULL;
    assert_int_equal(fl_informer_new(&cfg, &inf), 0);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    create_cm(f, "default", "a", "1");
    json_t *obj = NULL;
    for (int i = 0; i < 500 && fl_informer_get(inf, "default", "a", &obj) != 0; i++)
        usleep(10000);
    assert_non_null(obj);
    json_decref(obj);
    assert_int_equal(fl_informer_hot_held(inf), 1);
    fl_informer_rest_all();
    assert_int_equal(fl_informer_hot_held(inf), 0);
    assert_int_equal(fl_informer_get(inf, "default", "a", &obj), 0);
    assert_string_equal(data_k(obj), "1");
    json_decref(obj);
    assert_int_equal(fl_informer_hot_held(inf), 1);
    fl_informer_free(inf);
    fl_informer_rest_all(); /* a freed informer is no longer among them */
}

static uint32_t tag_of_k(void *ctx, const json_t *obj)
{
    (void)ctx;
    const char *k = data_k(obj);
    return k ? (uint32_t)atoi(k) + 1 : 0;
}

static void collect_tag(void *ctx, const char *key, uint32_t tag)
{
    json_object_set_new(ctx, key, json_integer(tag));
}

/* The tag of each entry, by key (a new object) */
static json_t *tags_of(fl_informer *inf)
{
    json_t *tags = json_object();
    fl_informer_each_tag(inf, "default", collect_tag, tags);
    return tags;
}

/* An informer's tagger summarises each object as its entry is made, from a list or an event,
 * and a walk reads the summaries: of a compact entry in process, without reading the object
 * (its revision is compacted away by then). */
static void test_informer_tags_entries_and_walks_the_tags(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default",
                              .transform = fl_informer_drop_managed_fields, .compact = true, .hot_objects = 1};
    fl_informer *inf = NULL;
    assert_int_equal(fl_informer_new(&cfg, &inf), 0);
    assert_int_equal(fl_informer_set_tagger(inf, tag_of_k, NULL), 0);
    assert_int_equal(fl_informer_set_tagger(inf, tag_of_k, NULL), FL_EINVAL); /* one */
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    json_t *tags = tags_of(inf);
    assert_int_equal(json_integer_value(json_object_get(tags, "default/a")), 2); /* listed */
    json_decref(tags);
    patch_cm(f, "default", "a", "7");
    create_cm(f, "default", "b", "3");
    for (int i = 0; i < 500; i++) { /* the events */
        tags = tags_of(inf);
        bool both = json_integer_value(json_object_get(tags, "default/a")) == 8 &&
                    json_integer_value(json_object_get(tags, "default/b")) == 4;
        json_decref(tags);
        if (both)
            break;
        usleep(10000);
    }
    char rv[64];
    assert_int_equal(fl_informer_get_rv(inf, "default", "a", rv, sizeof rv), 0);
    stop_and_compact_past(f, inf, "a", rv);
    tags = tags_of(inf);
    assert_int_equal(json_object_size(tags), 2);
    assert_int_equal(json_integer_value(json_object_get(tags, "default/a")), 8);
    assert_int_equal(json_integer_value(json_object_get(tags, "default/b")), 4);
    json_decref(tags);
    assert_int_equal(fl_informer_set_tagger(inf, tag_of_k, NULL), FL_EINVAL); /* started */
    fl_informer_free(inf);
}

/* Each add as "name:uid|bare;": whether the object came whole (with its uid, labels and
 * data) or as a bare list left it (its names and resourceVersion alone). */
typedef struct bare_adds {
    pthread_mutex_t mu;
    char buf[256];
} bare_adds;

static void note_bare_add(void *ctx, json_t *obj)
{
    bare_adds *b = ctx;
    const json_t *md = json_object_get(obj, "metadata");
    bool bare = !json_object_get(md, "uid") && !json_object_get(md, "labels") && !json_object_get(obj, "data") &&
                json_string_value(json_object_get(md, "resourceVersion")) &&
                json_string_value(json_object_get(md, "namespace")) && json_string_value(json_object_get(obj, "kind"));
    pthread_mutex_lock(&b->mu);
    size_t used = strlen(b->buf);
    snprintf(b->buf + used, sizeof b->buf - used, "%s:%s;", json_string_value(json_object_get(md, "name")),
             bare ? "bare" : json_object_get(md, "uid") ? "uid" : "?");
    pthread_mutex_unlock(&b->mu);
}

/* In process, a resuming compact informer with resume_bare lists an object unchanged since
 * the revision bare (its stored value not read), tells it so, and keeps only its revision,
 * as of a watched one; one changed since comes whole and keeps its decoding as any listed
 * object. */
static void test_resuming_informer_keeps_only_revisions_of_objects_listed_unchanged(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "old", "1");
    create_cm(f, "default", "old2", "1");
    int64_t resume = fl_store_rev(f->store);
    create_cm(f, "default", "new", "1");
    static const char *const partial[] = {"data", NULL};
    bare_adds adds = {.mu = PTHREAD_MUTEX_INITIALIZER};
    /* the handler reads nothing: a read of a cold entry would leave it in the hot slot */
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default",
                              .transform = fl_informer_drop_managed_fields, .partial_fields = partial,
                              .handlers = {.on_add = note_bare_add, .ctx = &adds},
                              .compact = true, .hot_objects = 1, .resume_rev = resume, .resume_bare = true};
    fl_informer *inf = NULL;
    assert_int_equal(fl_informer_new(&cfg, &inf), 0);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    assert_string_equal(adds.buf, "new:uid;old:bare;old2:bare;"); /* all told, in the list's order */
    char rv_old[64];
    assert_int_equal(fl_informer_get_rv(inf, "default", "old", rv_old, sizeof rv_old), 0);
    json_t *obj = NULL;
    /* read from the store, whole but for the partial fields; in the one hot slot now */
    assert_int_equal(fl_informer_get(inf, "default", "old2", &obj), 0);
    assert_non_null(json_object_get(json_object_get(obj, "metadata"), "uid"));
    assert_non_null(json_object_get(json_object_get(obj, "metadata"), "creationTimestamp"));
    json_decref(obj);
    stop_and_compact_past(f, inf, "old", rv_old);
    obj = NULL;
    assert_int_equal(fl_informer_get(inf, "default", "new", &obj), 0); /* its decoding, kept */
    assert_null(json_object_get(obj, "data"));
    json_decref(obj);
    obj = json_true();
    assert_int_equal(fl_informer_get(inf, "default", "old", &obj), FL_EEXPIRED); /* nothing kept */
    assert_null(obj);
    fl_informer_free(inf);
}

/* In process, a compact informer keeps of a watched object only its resourceVersion and
 * reads that revision from the store: once the log no longer has it, a read says so. */
static void test_compact_informer_reads_watched_objects_from_the_store_at_their_revision(void **state)
{
    fixture *f = *state;
    inf_log l;
    memset(&l, 0, sizeof l);
    rec_init(&l.r);
    fl_informer_config cfg = {.client = f->c, .resource = CM, .ns = "default", .backoff_min_ms = 20,
                              .backoff_max_ms = 200, .transform = fl_informer_drop_managed_fields,
                              .handlers = {.on_add = on_add, .on_update = on_update, .ctx = &l},
                              .compact = true, .hot_objects = 1};
    fl_informer *inf = synced_informer(&cfg, &l);
    create_cm(f, "default", "a", "1");
    create_cm(f, "default", "b", "1");
    patch_cm(f, "default", "a", "2");
    WAIT_UNTIL(rec_count(&l.r) >= 3, 5000);
    char rv[64];
    assert_int_equal(fl_informer_get_rv(inf, "default", "a", rv, sizeof rv), 0);
    json_t *obj = NULL;
    for (int i = 0; i < 2; i++) { /* the one hot slot alternates: each read of a reads the store */
        assert_int_equal(fl_informer_get(inf, "default", "b", &obj), 0);
        assert_string_equal(data_k(obj), "1");
        json_decref(obj);
        assert_int_equal(fl_informer_get(inf, "default", "a", &obj), 0);
        assert_string_equal(data_k(obj), "2");
        assert_string_equal(fl_client_object_rv(obj), rv);
        json_decref(obj);
    }
    stop_and_compact_past(f, inf, "a", rv);
    assert_int_equal(fl_informer_get(inf, "default", "b", &obj), 0); /* b is current still */
    json_decref(obj);
    obj = json_true();
    assert_int_equal(fl_informer_get(inf, "default", "a", &obj), FL_EEXPIRED);
    assert_null(obj);
    char now[64];
    assert_int_equal(fl_informer_get_rv(inf, "default", "a", now, sizeof now), 0);
    assert_string_equal(now, rv);
    fl_informer_free(inf);
    rec_close(&l.r);
}

static void test_informer_relists_after_its_watch_expires_without_spurious_events(void **state)
{
    fixture *f = *state;
    /* no bookmarks (the fixture's interval is 60 s), and watches that end every second:
     * the informer's resourceVersion stays where its last event in "default" left it */
    create_cm(f, "default", "a", "1");
    create_cm(f, "other", "churn", "0");
    inf_log l;
    fl_informer *inf = informer_for(f, &l, "default", 1);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    char rv0[64];
    fl_informer_last_rv(inf, rv0, sizeof rv0);

    for (int i = 1; i <= 20; i++) { /* history the informer does not watch, then compact it away */
        char v[8];
        snprintf(v, sizeof v, "%d", i);
        patch_cm(f, "other", "churn", v);
    }
    int64_t compacted = fl_store_compact(f->store);
    assert_true(compacted > atoll(rv0));
    /* the next watch from rv0 gets 410; only a re-list moves the informer past the compaction */
    char rv[64];
    WAIT_UNTIL((fl_informer_last_rv(inf, rv, sizeof rv), atoll(rv) >= compacted), 5000);
    assert_int_equal(rec_count(&l.r), 1); /* just the initial add: the re-list found nothing new */

    create_cm(f, "default", "b", "1"); /* and it watches again afterwards */
    WAIT_UNTIL(rec_has(&l.r, "add default/b=1"), 5000);
    assert_cache_matches_server(f, inf, "default");
    fl_informer_free(inf);
    rec_close(&l.r);
}

static void test_informer_recovers_from_a_broken_stream_with_the_right_diff(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "keep", "1");
    create_cm(f, "default", "change", "1");
    create_cm(f, "default", "gone", "1");
    proxy *px = proxy_start(f->port);
    fl_client *pc = client_at(px->port, "t");
    inf_log l;
    fl_informer *inf = informer_via(pc, &l, "default", 0);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    assert_int_equal(rec_count(&l.r), 3);

    /* cut the informer off mid-stream, change things behind its back, compact the history */
    atomic_store(&px->down, true);
    sleep_ms(100);
    create_cm(f, "default", "new", "1");
    for (int i = 2; i <= 12; i++) {
        char v[8];
        snprintf(v, sizeof v, "%d", i);
        patch_cm(f, "default", "change", v);
    }
    delete_cm(f, "default", "gone");
    fl_store_compact(f->store);
    sleep_ms(300); /* the informer fails, backs off, fails again */
    assert_int_equal(rec_count(&l.r), 3);
    assert_int_equal(atomic_load(&l.listed_ok), 1);
    /* the line broke: it watches again from its revision, without listing while it cannot */
    assert_int_equal(atomic_load(&l.listed_failed), 0);
    atomic_store(&px->down, false);

    WAIT_UNTIL(rec_count(&l.r) >= 6, 10000);
    WAIT_UNTIL(atomic_load(&l.listed_ok) == 2, 5000);
    sleep_ms(100);
    if (rec_count(&l.r) != 6)
        rec_dump(&l.r);
    assert_int_equal(rec_count(&l.r), 6);
    assert_true(rec_has(&l.r, "add default/new=1"));
    assert_true(rec_has(&l.r, "update default/change=1 -> default/change=12"));
    assert_true(rec_has(&l.r, "delete default/gone=1"));
    assert_int_equal(atomic_load(&l.cache_misses), 0);
    assert_cache_matches_server(f, inf, "default");

    patch_cm(f, "default", "keep", "2"); /* and it is watching again */
    WAIT_UNTIL(rec_has(&l.r, "update default/keep=1 -> default/keep=2"), 5000);
    fl_informer_free(inf);
    fl_client_free(pc);
    proxy_stop(px);
    rec_close(&l.r);
}

/* An informer whose replica goes away watches again from its revision on the next one: the
 * replicas share the store's revisions, so nothing is listed again. */
static void test_informer_moves_to_the_next_server_without_relisting(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "keep", "1");
    proxy *px = proxy_start(f->port);
    char urls[2][64];
    fl_client *c = client_at_both(px->port, f->port, urls);
    inf_log l;
    fl_informer *inf = informer_via(c, &l, "default", 0);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    WAIT_UNTIL(atomic_load(&l.listed_ok) == 1, 5000);
    assert_string_equal(fl_client_server(c), urls[0]);

    proxy_stop(px); /* its watch breaks; its port refuses */
    create_cm(f, "default", "new", "1");
    patch_cm(f, "default", "keep", "2");
    WAIT_UNTIL(rec_has(&l.r, "update default/keep=1 -> default/keep=2"), 5000);
    assert_true(rec_has(&l.r, "add default/new=1"));
    assert_int_equal(atomic_load(&l.listed_ok), 1);
    assert_int_equal(atomic_load(&l.listed_failed), 0);
    assert_string_equal(fl_client_server(c), urls[1]);
    assert_int_equal(atomic_load(&l.cache_misses), 0);
    assert_cache_matches_server(f, inf, "default");
    fl_informer_free(inf);
    fl_client_free(c);
    rec_close(&l.r);
}

/* ---- the execution engine starts member watches ahead ---- */

static void ahead_cluster(void *ctx, const char *cluster, fl_exec_cluster *out)
{
    (void)ctx;
    (void)cluster;
    out->present = out->deliver = true;
}

/* The clusters delivered to: c1 (the Work's) and ahead_more others; one member API serves
 * them all */
static atomic_int ahead_more;

static void ahead_each_cluster(void *ctx, void (*fn)(void *fctx, const char *cluster), void *fctx)
{
    (void)ctx;
    fn(fctx, "c1");
    for (int i = 0; i < atomic_load(&ahead_more); i++) {
        char name[32];
        snprintf(name, sizeof name, "other%d", i);
        fn(fctx, name);
    }
}

static int ahead_member(void *ctx, const char *cluster, fl_client **out, char **err)
{
    (void)cluster;
    (void)err;
    *out = ctx;
    return 0;
}

/* LISTs of configmaps the API has answered (its request metric, every code) */
static long configmap_lists(void)
{
    const char *series = "flotilla_apiserver_request_total{verb=\"LIST\",resource=\"configmaps\"";
    size_t len = 0;
    char *text = fl_metrics_render(&len);
    long n = 0;
    for (char *l = text; l && *l;) {
        char *end = strchr(l, '\n');
        if (end)
            *end = 0;
        char *sp = strrchr(l, ' ');
        if (!strncmp(l, series, strlen(series)) && sp)
            n += atol(sp + 1);
        l = end ? end + 1 : NULL;
    }
    free(text);
    return n;
}

static bool cm_exists(fixture *f, const char *ns, const char *name)
{
    json_t *got = NULL;
    fl_client_error err;
    int rc = fl_client_get(f->c, &CM, ns, name, &got, &err);
    json_decref(got);
    return rc == 0;
}

typedef struct gate {
    atomic_bool open, entered;
} gate;

static void gate_add(void *ctx, json_t *obj)
{
    (void)obj;
    gate *g = ctx;
    atomic_store(&g->entered, true);
    while (!atomic_load(&g->open))
        sleep_ms(5);
}

/* While the Work cache is still making its first list (held here in a handler of that list,
 * after the engine's own), the member watch a listed Work needs is already listing: after a
 * restart the members list what they have while the Works are still being decoded. The
 * kind is watched in every cluster delivered to (more != 0 of them besides the Work's), not
 * only in the listed Work's: the list reaches another cluster's Works later. But not in
 * more than 32 clusters: then only the Work's own watch starts. */
static void exec_ahead_run(fixture *f, int more, long want_lists)
{
    atomic_store(&ahead_more, more);
    assert_int_equal(api_call(f, "POST", "/api/v1/namespaces",
                              "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"karmada-es-c1\"}}"),
                     201);
    assert_int_equal(
        api_call(f, "POST", "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-c1/works",
                 "{\"apiVersion\":\"work.karmada.io/v1alpha1\",\"kind\":\"Work\",\"metadata\":{\"name\":\"w1\"},"
                 "\"spec\":{\"workload\":{\"manifests\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                 "\"metadata\":{\"name\":\"ahead\",\"namespace\":\"other\"},\"data\":{\"k\":\"v\"}}]}}}"),
        201);
    fl_informer *works = NULL;
    fl_informer_config wc = {.client = f->c, .resource = {"work.karmada.io/v1alpha1", "works"}};
    assert_int_equal(fl_informer_new(&wc, &works), 0);
    fl_exec *x = NULL;
    fl_exec_config ec = {.cp = f->c,
                         .works = works,
                         .ops = {.cluster = ahead_cluster,
                                 .member = ahead_member,
                                 .each_cluster = ahead_each_cluster,
                                 .ctx = f->c}};
    assert_int_equal(fl_exec_new(&ec, &x), 0);
    gate g;
    atomic_init(&g.open, false);
    atomic_init(&g.entered, false);
    assert_int_equal(fl_informer_add_handlers(works, &(fl_informer_handlers){.on_add = gate_add, .ctx = &g}), 0);
    long before = configmap_lists();
    assert_int_equal(fl_exec_start(x), 0);
    assert_int_equal(fl_informer_start(works), 0);
    WAIT_UNTIL(atomic_load(&g.entered), 5000);
    WAIT_UNTIL(configmap_lists() >= before + want_lists, 5000); /* one LIST per cluster watched */
    sleep_ms(300);
    assert_int_equal(configmap_lists(), before + want_lists); /* and no more */
    assert_false(fl_informer_has_synced(works));
    atomic_store(&g.open, true);
    /* and the Work is delivered through that watch once the list is over */
    WAIT_UNTIL(cm_exists(f, "other", "ahead"), 10000);
    fl_exec_free(x);
    fl_informer_free(works);
}

static void test_exec_starts_member_watches_while_works_list(void **state)
{
    exec_ahead_run(*state, 1, 2); /* c1's watch and other0's */
}

static void test_exec_starts_watches_ahead_in_few_clusters_only(void **state)
{
    exec_ahead_run(*state, 32, 1); /* 33 clusters: only c1's */
}

/* A Work waiting for a member watch's first list is parked on the watch: the end of each
 * list (failed or not) puts it back on the queue, and once the watch has listed nothing
 * parks. A list that has not moved for the grace is not waited for. */
static void test_member_watch_parks_works_until_its_list_is_over(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "m", "1");
    proxy *px = proxy_start(f->port);
    atomic_store(&px->down, true); /* the member refuses: its lists fail */
    fl_client *pc = client_at(px->port, "t");
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_ws_watches *w = fl_ws_watches_new(q);
    fl_ws_watch *wt = NULL;
    assert_int_equal(fl_ws_watch_get(w, "c1", pc, "v1", "ConfigMap", "configmaps", -1, &wt), 0);
    assert_true(fl_ws_watch_listing(wt, 60000));
    assert_true(fl_ws_watch_park(wt, "karmada-es-c1/w1"));
    char *key = NULL;
    /* the failed list puts it back */
    assert_int_equal(fl_workqueue_get(q, 5000, &key), 0);
    assert_string_equal(key, "karmada-es-c1/w1");
    fl_workqueue_done(q, key);
    free(key);
    /* no page has come since the watch started: after the grace it is not waited for */
    sleep_ms(150);
    assert_false(fl_ws_watch_listing(wt, 100));
    assert_true(fl_ws_watch_listing(wt, 60000));

    /* parked while the member is down, back once it answers and the list is over */
    assert_true(fl_ws_watch_park(wt, "karmada-es-c1/w2"));
    atomic_store(&px->down, false);
    assert_int_equal(fl_informer_wait_synced(fl_ws_watch_informer(wt), 10000), 0);
    bool got_w2 = false;
    for (int i = 0; i < 4 && !got_w2 && fl_workqueue_get(q, 5000, &key) == 0; i++) {
        got_w2 = !strcmp(key, "karmada-es-c1/w2");
        fl_workqueue_done(q, key);
        free(key);
    }
    assert_true(got_w2);
    /* listed: nothing waits, nothing parks */
    assert_false(fl_ws_watch_listing(wt, 60000));
    assert_false(fl_ws_watch_park(wt, "karmada-es-c1/w3"));
    fl_ws_watch_put(w, wt);
    fl_ws_watches_free(w);
    fl_workqueue_free(q);
    fl_client_free(pc);
    proxy_stop(px);
}

/* A member watch's first list queues no Work (those are queued or parked already); a watch
 * that replaces one for a new client does, so its Works see what changed between the two. */
static void test_member_watch_first_list_queues_only_when_replacing(void **state)
{
    fixture *f = *state;
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:{s:s}, s:{s:s, s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                            "ConfigMap", "metadata", "name", "owned", "labels", FL_MANAGED_LABEL, "true",
                            "annotations", FL_WORK_NAMESPACE_ANNOTATION, "karmada-es-c1", FL_WORK_NAME_ANNOTATION,
                            "w1", "data", "k", "1");
    fl_client_error err;
    assert_int_equal(fl_client_create(f->c, &CM, "default", obj, NULL, NULL, &err), 0);
    json_decref(obj);
    fl_client *a = client_at(f->port, "t"), *b = client_at(f->port, "t");
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_ws_watches *w = fl_ws_watches_new(q);
    fl_ws_watch *wt = NULL;
    char *key = NULL;
    assert_int_equal(fl_ws_watch_get(w, "c1", a, "v1", "ConfigMap", "configmaps", 10000, &wt), 0);
    fl_ws_watch_put(w, wt);
    assert_int_equal(fl_workqueue_get(q, 300, &key), FL_ETIMEDOUT); /* listed, nothing queued */
    assert_int_equal(fl_ws_watch_get(w, "c1", b, "v1", "ConfigMap", "configmaps", 10000, &wt), 0);
    fl_ws_watch_put(w, wt);
    assert_int_equal(fl_workqueue_get(q, 5000, &key), 0);
    assert_string_equal(key, "karmada-es-c1/w1");
    fl_workqueue_done(q, key);
    free(key);
    fl_ws_watches_free(w);
    fl_workqueue_free(q);
    fl_client_free(a);
    fl_client_free(b);
}

typedef struct counted {
    fl_informer *inf;
    atomic_int calls, unsynced; /* reconciles; those that found the cache not listed */
} counted;

static int count_reconcile(void *ctx, const char *key)
{
    (void)key;
    counted *c = ctx;
    if (!fl_informer_has_synced(c->inf))
        atomic_fetch_add(&c->unsynced, 1);
    atomic_fetch_add(&c->calls, 1);
    return 0;
}

/* Workers started with informers to wait for take no key before those have listed. */
static void test_controller_workers_wait_for_their_caches(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    inf_log l;
    fl_informer *inf = informer_for(f, &l, NULL, 0);
    fl_workqueue *q = fl_workqueue_new(NULL);
    counted c = {.inf = inf};
    fl_ctrl_workers *w = fl_ctrl_workers_start_synced(q, "test", 2, count_reconcile, &c, (fl_informer *const[]){inf, NULL});
    fl_workqueue_add(q, "default/a");
    sleep_ms(300);
    assert_int_equal(atomic_load(&c.calls), 0); /* queued, not taken */
    assert_int_equal(fl_informer_start(inf), 0);
    WAIT_UNTIL(atomic_load(&c.calls) == 1, 5000);
    assert_int_equal(atomic_load(&c.calls), 1);
    assert_int_equal(atomic_load(&c.unsynced), 0);
    fl_workqueue_add(q, "default/b"); /* and they go on taking keys */
    WAIT_UNTIL(atomic_load(&c.calls) == 2, 5000);
    assert_int_equal(atomic_load(&c.calls), 2);
    fl_ctrl_workers_join(w);
    /* workers that never saw their caches list still stop */
    inf_log l2;
    fl_informer *idle = informer_for(f, &l2, NULL, 0);
    fl_workqueue *q2 = fl_workqueue_new(NULL);
    fl_ctrl_workers *w2 = fl_ctrl_workers_start_synced(q2, "test", 1, count_reconcile, &c, (fl_informer *const[]){idle, NULL});
    fl_ctrl_workers_join(w2);
    fl_workqueue_free(q2);
    fl_informer_free(idle);
    rec_close(&l2.r);
    fl_workqueue_free(q);
    fl_informer_free(inf);
    rec_close(&l.r);
}

/* An informer told to keep its first list silent caches it and says it has synced and
 * listed, but tells no add for it; what happens after is told as ever. */
static void test_informer_keeps_its_first_list_silent_when_asked(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "a", "1");
    create_cm(f, "default", "b", "1");
    create_cm(f, "default", "c", "1");
    inf_log l;
    fl_informer *inf = informer_with(f->c, &l, "default", 0, true);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    WAIT_UNTIL(atomic_load(&l.listed_ok) == 1, 5000);
    assert_int_equal(rec_count(&l.r), 0);
    assert_cache_matches_server(f, inf, "default");
    json_t *b = NULL;
    assert_int_equal(fl_informer_get(inf, "default", "b", &b), 0);
    assert_string_equal(data_k(b), "1");
    json_decref(b);
    create_cm(f, "default", "d", "1");
    patch_cm(f, "default", "a", "2");
    WAIT_UNTIL(rec_count(&l.r) >= 2, 5000);
    assert_true(rec_has(&l.r, "add default/d=1"));
    assert_true(rec_has(&l.r, "update default/a=1 -> default/a=2"));
    fl_informer_free(inf);
    rec_close(&l.r);
}

/* An informer resuming at a revision whose first list is of a later one tells, besides the
 * list's adds, the deletions since that revision of objects the list does not hold (with
 * their last state); not one of an object deleted and made again, nor anything twice. */
static void test_informer_resuming_tells_the_deletions_since_its_revision(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "kept", "1");
    create_cm(f, "default", "gone", "1");
    create_cm(f, "default", "back", "1");
    create_cm(f, "default", "edited", "1");
    int64_t resume = fl_store_rev(f->store);
    delete_cm(f, "default", "gone");
    delete_cm(f, "default", "back");
    create_cm(f, "default", "back", "2");
    patch_cm(f, "default", "edited", "2");
    inf_log l;
    fl_informer *inf = informer_resuming(f->c, &l, "default", 0, false, resume, NULL);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    WAIT_UNTIL(rec_has(&l.r, "delete default/gone=1"), 5000);
    create_cm(f, "default", "later", "1"); /* past the replay: told as ever */
    WAIT_UNTIL(rec_has(&l.r, "add default/later=1"), 5000);
    assert_true(rec_has(&l.r, "add default/kept=1"));
    assert_true(rec_has(&l.r, "add default/back=2"));
    assert_true(rec_has(&l.r, "add default/edited=2"));
    assert_int_equal(rec_count(&l.r), 5);
    assert_int_equal(atomic_load(&l.cache_misses), 0);
    assert_cache_matches_server(f, inf, "default");
    fl_informer_free(inf);
    rec_close(&l.r);

    /* at the list's own revision there is nothing to replay */
    inf = informer_resuming(f->c, &l, "default", 0, false, fl_store_rev(f->store), NULL);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    delete_cm(f, "default", "later");
    WAIT_UNTIL(rec_has(&l.r, "delete default/later=1"), 5000);
    assert_int_equal(rec_count(&l.r), 5); /* four adds, the delete */
    fl_informer_free(inf);
    rec_close(&l.r);
}

/* An informer watching from a revision without a list tells what changed since (a deletion
 * with the event's object, though it never held it) and nothing else, and holds only that
 * until it lists; one whose revision the server's history has not reached lists. */
static void test_informer_watching_from_a_revision_tells_only_what_changed_since(void **state)
{
    fixture *f = *state;
    create_cm(f, "default", "kept", "1");
    create_cm(f, "default", "gone", "1");
    create_cm(f, "default", "edited", "1");
    char from[32];
    snprintf(from, sizeof from, "%lld", (long long)fl_store_rev(f->store));
    delete_cm(f, "default", "gone");
    patch_cm(f, "default", "edited", "2");
    create_cm(f, "default", "new", "1");
    int64_t last = fl_store_rev(f->store);
    inf_log l;
    fl_informer *inf = informer_resuming(f->c, &l, "default", 0, false, 0, from);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 5000), 0);
    assert_false(fl_informer_complete(inf));
    WAIT_UNTIL(rec_has(&l.r, "delete default/gone=1") && rec_has(&l.r, "add default/edited=2") &&
                   rec_has(&l.r, "add default/new=1"),
               5000);
    assert_int_equal(rec_count(&l.r), 3);
    assert_int_equal(atomic_load(&l.listed_ok), 0);
    WAIT_UNTIL(fl_informer_told_rv(inf) == last, 5000); /* the handlers have seen up to it */
    json_t *obj = NULL; /* not held, and perhaps there: ask the server */
    assert_int_equal(fl_informer_get(inf, "default", "kept", &obj), FL_EEXPIRED);
    char rv[32];
    assert_int_equal(fl_informer_get_rv(inf, "default", "kept", rv, sizeof rv), FL_ENOTFOUND);
    assert_false(fl_informer_complete(inf));
    fl_informer_free(inf);
    rec_close(&l.r);

    /* a revision the server has not reached: it lists, and is complete */
    snprintf(from, sizeof from, "%lld", (long long)fl_store_rev(f->store) + 1000);
    inf = informer_resuming(f->c, &l, "default", 0, false, 0, from);
    assert_int_equal(fl_informer_start(inf), 0);
    WAIT_UNTIL(atomic_load(&l.listed_ok) == 1, 5000);
    assert_true(fl_informer_complete(inf));
    assert_true(fl_informer_told_rv(inf) >= last);
    assert_true(rec_has(&l.r, "add default/kept=1"));
    assert_int_equal(rec_count(&l.r), 3); /* kept, edited, new */
    assert_int_equal(fl_informer_get(inf, "default", "kept", &obj), 0);
    json_decref(obj);
    assert_cache_matches_server(f, inf, "default");
    fl_informer_free(inf);
    rec_close(&l.r);
}

static void test_informer_stops_promptly_while_the_server_is_down(void **state)
{
    fixture *f = *state;
    fl_http_stop(f->http);
    f->http = NULL;
    inf_log l;
    fl_informer *inf = informer_for(f, &l, NULL, 0);
    assert_int_equal(fl_informer_start(inf), 0);
    assert_int_equal(fl_informer_wait_synced(inf, 300), FL_ETIMEDOUT);
    int64_t t0 = now_ms();
    fl_informer_stop(inf);
    assert_true(now_ms() - t0 < 1000);
    assert_int_equal(fl_informer_wait_synced(inf, 1000), FL_ECLOSED);
    fl_informer_free(inf);
    rec_close(&l.r);
    fl_informer_free(NULL);
}

int main(void)
{
    fl_mem_init();
    fl_kinds_init();
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_create_get_update_delete_round_trip),
        T(test_update_status_changes_only_status),
        T(test_answers_without_managed_fields_leave_them_to_the_server),
        T(test_objects_sent_and_received_stay_the_callers),
        T(test_listed_items_are_the_callers_to_trim),
        T(test_update_given_stores_the_object_handed_over),
        T(test_errors_map_to_codes_with_the_status_message),
        T(test_list_pages_with_continue_at_one_snapshot),
        T(test_list_filters_by_label_and_field_selectors),
        T(test_continue_token_expires_after_compaction),
        T(test_patch_types_merge_json_strategic_and_apply),
        T(test_delete_honours_preconditions_dry_run_and_propagation),
        T(test_one_client_serves_many_threads),
        T(test_resolve_finds_kinds_through_discovery_including_new_crds),
        T(test_resolve_uses_learned_discovery_without_asking),
        T(test_client_moves_to_the_next_server_when_one_refuses),
        T(test_client_leaves_a_replica_that_goes_away_and_resends_nothing_sent),
        T(test_https_with_the_kubeconfig_the_server_writes),
        T(test_watch_delivers_changes_in_order_and_stops_on_cancel),
        T(test_selector_watch_turns_matching_changes_into_adds_and_deletes),
        T(test_watch_without_resource_version_starts_with_current_objects),
        T(test_watch_gets_bookmarks_and_ends_at_the_server_timeout),
        T(test_watch_from_a_compacted_revision_is_expired),
        T(test_cancel_before_the_watch_starts_returns_at_once),
        cmocka_unit_test(test_in_process_lists_skip_fields_of_items_decoded_for_them),
        T(test_informer_syncs_then_sees_adds_updates_and_deletes),
        T(test_informer_watching_from_a_revision_tells_only_what_changed_since),
        T(test_informer_lists_partial_objects_and_reads_them_whole),
        T(test_compact_informer_keeps_watched_partial_objects_as_stored_values),
        T(test_informer_without_old_objects_still_tells_updates_from_adds),
        T(test_informer_tells_first_list_adds_before_the_list_ends),
        T(test_informer_relists_after_its_watch_expires_without_spurious_events),
        T(test_informer_recovers_from_a_broken_stream_with_the_right_diff),
        T(test_informer_moves_to_the_next_server_without_relisting),
        T(test_exec_starts_member_watches_while_works_list),
        T(test_exec_starts_watches_ahead_in_few_clusters_only),
        T(test_member_watch_parks_works_until_its_list_is_over),
        T(test_member_watch_first_list_queues_only_when_replacing),
        T(test_controller_workers_wait_for_their_caches),
        T(test_informer_keeps_its_first_list_silent_when_asked),
        T(test_informer_stops_promptly_while_the_server_is_down),
    };
#undef T
    /* through the in-process transport: every test that uses only f->c */
#define L(name) cmocka_unit_test_setup_teardown(name, setup_local, teardown)
    const struct CMUnitTest local[] = {
        L(test_create_get_update_delete_round_trip),
        L(test_update_status_changes_only_status),
        L(test_objects_sent_and_received_stay_the_callers),
        L(test_listed_items_are_the_callers_to_trim),
        L(test_update_given_stores_the_object_handed_over),
        L(test_errors_map_to_codes_with_the_status_message),
        L(test_list_pages_with_continue_at_one_snapshot),
        L(test_list_filters_by_label_and_field_selectors),
        L(test_continue_token_expires_after_compaction),
        L(test_patch_types_merge_json_strategic_and_apply),
        L(test_delete_honours_preconditions_dry_run_and_propagation),
        L(test_one_client_serves_many_threads),
        /* (not test_resolve_finds_kinds_through_discovery_including_new_crds: the kinds
         * registry is process-wide, and the run over HTTP has already registered its CRD) */
        L(test_resolve_uses_learned_discovery_without_asking),
        L(test_watch_delivers_changes_in_order_and_stops_on_cancel),
        L(test_watch_without_resource_version_starts_with_current_objects),
        L(test_watch_gets_bookmarks_and_ends_at_the_server_timeout),
        L(test_watch_from_a_compacted_revision_is_expired),
        L(test_cancel_before_the_watch_starts_returns_at_once),
        L(test_informer_syncs_then_sees_adds_updates_and_deletes),
        L(test_informer_lists_partial_objects_and_reads_them_whole),
        L(test_compact_informer_keeps_watched_partial_objects_as_stored_values),
        L(test_informer_tells_first_list_adds_before_the_list_ends),
        L(test_informer_relists_after_its_watch_expires_without_spurious_events),
        L(test_informer_resuming_tells_the_deletions_since_its_revision),
        L(test_informer_watching_from_a_revision_tells_only_what_changed_since),
    };
#undef L
    /* compact informers (texts, decoded on demand), over HTTP and in process */
#define C(name, set_up) cmocka_unit_test_setup_teardown(name, set_up, teardown)
    const struct CMUnitTest compact[] = {
        C(test_informer_syncs_then_sees_adds_updates_and_deletes, setup_compact),
        C(test_informer_without_old_objects_still_tells_updates_from_adds, setup_compact),
        C(test_informer_without_old_objects_still_tells_updates_from_adds, setup_local_compact),
        C(test_compact_informer_sheds_objects_to_what_it_keeps, setup_compact),
        C(test_compact_informer_sheds_objects_to_what_it_keeps, setup_local_compact),
        C(test_compact_informer_reads_watched_objects_from_the_store_at_their_revision, setup_local_compact),
        C(test_partial_informer_keeps_no_value_of_listed_objects, setup_local_compact),
        C(test_informers_at_rest_let_go_of_their_hot_decodings, setup_local_compact),
        C(test_informers_at_rest_let_go_of_their_hot_decodings, setup_compact),
        C(test_informer_tags_entries_and_walks_the_tags, setup_local_compact),
        C(test_informer_tags_entries_and_walks_the_tags, setup_compact),
        C(test_resuming_informer_keeps_only_revisions_of_objects_listed_unchanged, setup_local_compact),
        C(test_informer_relists_after_its_watch_expires_without_spurious_events, setup_compact),
        C(test_informer_recovers_from_a_broken_stream_with_the_right_diff, setup_compact),
        C(test_informer_keeps_its_first_list_silent_when_asked, setup_compact),
        C(test_informer_resuming_tells_the_deletions_since_its_revision, setup_compact),
        C(test_informer_resuming_tells_the_deletions_since_its_revision, setup_local_compact),
        C(test_informer_watching_from_a_revision_tells_only_what_changed_since, setup_compact),
        C(test_informer_syncs_then_sees_adds_updates_and_deletes, setup_local_compact),
        C(test_informer_tells_first_list_adds_before_the_list_ends, setup_local_compact),
        C(test_informer_relists_after_its_watch_expires_without_spurious_events, setup_local_compact),
    };
#undef C
    int failed = cmocka_run_group_tests_name("over HTTP", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("in process", local, NULL, NULL);
    failed += cmocka_run_group_tests_name("compact informers", compact, NULL, NULL);
    return failed;
}
