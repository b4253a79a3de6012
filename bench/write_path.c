/* write_path.c - the cost of one API write in process, as the server's controllers make it.
 *
 *   write_path [--writes N] [--no-informer]
 *
 * An in-process API on its own SQLite store (durable as the server's), the controllers'
 * in-process client (fl_api_local_client), and one Work of the size the binding controller
 * writes (write_path_work.json: a Deployment in a Work, 3.2 KiB). N times: PUT the Work with
 * spec.suspendDispatching flipped, then PUT its status; an informer on Works (as the
 * controllers keep one) receives every event unless --no-informer.
 *
 * Prints CPU microseconds (process user + system, all threads) per PUT and per status PUT,
 * and beside them, measured in the same run, the baseline: decoding and encoding the same
 * object once (the least a write that stores JSON does). For figures that do not move with
 * the machine's load, run it under `valgrind --tool=callgrind` with two values of --writes
 * and divide the difference in instructions by the difference in writes. */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "client/client.h"
#include "client/informer.h"
#include "core/json.h"
#include "store/store.h"

static const fl_gvr NS = {"v1", "namespaces"};
static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};
static atomic_int events;

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)ctx;
    (void)old_obj;
    (void)new_obj;
    atomic_fetch_add(&events, 1);
}

int main(int argc, char **argv)
{
    int n = 2000;
    bool informer = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--writes") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-informer"))
            informer = false;
        else {
            fprintf(stderr, "usage: write_path [--writes N] [--no-informer]\n");
            return 2;
        }
    }
    json_error_t je;
    json_t *work = json_load_file(WRITE_PATH_FIXTURE, 0, &je);
    if (!work) {
        fprintf(stderr, "write_path: %s: %s\n", WRITE_PATH_FIXTURE, je.text);
        return 1;
    }
    char dir[] = "/tmp/fl-bench-write-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char db[256];
    snprintf(db, sizeof db, "%s/store.db", dir);
    fl_store *st = NULL;
    fl_store_config sc = {.path = db, .durable = true, .compact_window = 100000, .compact_interval_ms = -1};
    if (fl_store_open(&sc, &st)) {
        fprintf(stderr, "write_path: cannot open a store in %s\n", dir);
        return 1;
    }
    fl_api api = {.store = st, .bookmark_interval_ms = 60000};
    fl_api_load_crds(&api);
    fl_client *c = fl_api_local_client(&api, "write-path/1");
    fl_client_error e;
    json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
                           "karmada-es-member1");
    if (fl_client_create(c, &NS, NULL, ns, NULL, NULL, &e) || fl_client_create(c, &WORKS, "karmada-es-member1", work,
                                                                               NULL, NULL, &e)) {
        fprintf(stderr, "write_path: setup: %s\n", e.message);
        return 1;
    }
    fl_informer *inf = NULL;
    if (informer) {
        fl_informer_config cfg = {.client = c, .resource = WORKS, .handlers = {.on_update = on_update},
                                  .transform = fl_informer_drop_managed_fields};
        fl_informer_new(&cfg, &inf);
        fl_informer_start(inf);
        fl_informer_wait_synced(inf, 10000);
    }
    /* baseline: one decode and one encode of the object, n times */
    char *text = json_dumps(work, JSON_COMPACT);
    size_t len = strlen(text);
    double b0 = cpu_s();
    for (int i = 0; i < n; i++) {
        json_t *o = fl_json_load(text, len);
        size_t l = 0;
        free(fl_json_dumps(o, &l));
        json_decref(o);
    }
    double base_us = (cpu_s() - b0) / n * 1e6;

    json_t *spec = json_object_get(work, "spec");
    double t0 = cpu_s();
    for (int i = 0; i < n; i++) {
        json_object_set_new(spec, "suspendDispatching", json_boolean(i % 2 == 0));
        if (fl_client_update(c, &WORKS, "karmada-es-member1", work, NULL, NULL, &e)) {
            fprintf(stderr, "write_path: PUT: %s\n", e.message);
            return 1;
        }
    }
    double t1 = cpu_s();
    json_t *status = json_object();
    json_object_set_new(work, "status", status);
    for (int i = 0; i < n; i++) {
        /* a field WorkStatus has (unknown ones are dropped on write) */
        json_object_set_new(status, "conditions",
                            json_pack("[{s:s, s:s, s:I, s:s, s:s, s:s}]", "type", "Applied", "status", "True",
                                      "observedGeneration", (json_int_t)i, "reason", "AppliedSuccessful", "message",
                                      "applied", "lastTransitionTime", "2026-11-22T08:49:57Z"));
        if (fl_client_update_status(c, &WORKS, "karmada-es-member1", work, NULL, NULL, &e)) {
            fprintf(stderr, "write_path: PUT status: %s\n", e.message);
            return 1;
        }
    }
    double t2 = cpu_s();
    for (int i = 0; i < 200 && informer && atomic_load(&events) < 2 * n; i++)
        usleep(10000);
    double put_us = (t1 - t0) / n * 1e6, st_us = (t2 - t1) / n * 1e6;
    printf("in-process writes of a %zu-byte Work%s, %d each:\n", len, informer ? " (one informer watching)" : "", n);
    printf("  PUT          %7.1f us CPU   (x%.1f the baseline)\n", put_us, put_us / base_us);
    printf("  PUT status   %7.1f us CPU   (x%.1f the baseline)\n", st_us, st_us / base_us);
    printf("  baseline: decode + encode the same object once: %.1f us CPU\n", base_us);
    if (informer)
        printf("  informer events received: %d of %d\n", atomic_load(&events), 2 * n);
    fl_informer_free(inf);
    fl_client_free(c);
    fl_store_free(st);
    free(text);
    json_decref(ns);
    json_decref(work);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
