/* fuzz_api.c - libFuzzer target for request handling: arbitrary method, path, query,
 * content type and body go through fl_api_handle() against a real (non-durable) store.
 *
 * Input layout: lines "METHOD\nPATH\nk=v&k=v\nCONTENT-TYPE\n" then the body. Any
 * response is fine; crashes, leaks and sanitizer reports are the findings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/kinds.h"
#include "core/mem.h"

static fl_api api;
static char store_path[] = "/tmp/flotilla-fuzz-XXXXXX";

/* The store's file and SQLite's two beside it go when the fuzzer exits. */
static void remove_store(void)
{
    static const char *const tails[] = {"", "-wal", "-shm"};
    char p[sizeof store_path + 8];
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        snprintf(p, sizeof p, "%s%s", store_path, tails[i]);
        unlink(p);
    }
}

static void setup(void)
{
    fl_mem_init();
    fl_kinds_init();
    int fd = mkstemp(store_path);
    if (fd >= 0)
        close(fd);
    unlink(store_path);
    atexit(remove_store);
    fl_store_config cfg = {.path = store_path, .durable = false, .compact_interval_ms = -1};
    if (fl_store_open(&cfg, &api.store) != 0)
        abort();
    api.bookmark_interval_ms = 1000;
    const char *ns = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}";
    fl_req r = {.method = "POST", .path = "/api/v1/namespaces", .content_type = "application/json",
                .body = ns, .body_len = strlen(ns)};
    fl_api_handle(&api, &r);
    free(r.resp);
}

static char *take_line(const char **p, const char *end)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    char *s = fl_strndup(*p, n);
    *p += n + (nl ? 1 : 0);
    return s;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int ready;
    if (!ready) {
        setup();
        ready = 1;
    }
    const char *p = (const char *)data, *end = p + size;
    char *method = take_line(&p, end), *path = take_line(&p, end), *query = take_line(&p, end),
         *ctype = take_line(&p, end);
    char *body = fl_strndup(p, (size_t)(end - p));
    fl_kvpair q[8];
    size_t nq = 0;
    char *save = NULL;
    for (char *tok = strtok_r(query, "&", &save); tok && nq < 8; tok = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq = 0;
        q[nq].key = tok;
        q[nq].value = eq ? eq + 1 : (char *)"";
        nq++;
    }
    /* a watch would block waiting for events: keep the fuzzer on the other verbs */
    bool is_watch = false;
    for (size_t i = 0; i < nq; i++)
        if (!strcmp(q[i].key, "watch"))
            is_watch = true;
    if (!is_watch && !strstr(path, "/watch")) {
        fl_req r = {.method = method, .path = path, .query = q, .nquery = nq,
                    .content_type = ctype[0] ? ctype : NULL, .accept = "application/json",
                    .body = body, .body_len = (size_t)(end - p)};
        fl_api_handle(&api, &r);
        free(r.resp);
        free(r.warnings);
        fl_api_stream_free(r.stream);
    }
    free(method);
    free(path);
    free(query);
    free(ctype);
    free(body);
    return 0;
}
