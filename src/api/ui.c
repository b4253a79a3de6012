/* ui.c - serves the dashboard's assets (see ui.h) from the table ui/embed.cmake generates.
 *
 * A path is looked up by its exact name in the table, never on a file system, so no path can
 * reach outside the assets. Every answer carries headers that keep the page self-contained:
 * a Content-Security-Policy that allows scripts, styles and fetches from this origin only (no
 * inline script, no remote load, no framing), nosniff, and no Referer. The assets are cached
 * but revalidated on each load (Cache-Control comes from the transport: no-cache, private),
 * and an unchanged one is answered 304 from its ETag, a hash of its bytes: a new binary with a
 * changed page is seen at once, an unchanged one costs a round trip and no bytes. */
#include "api/ui.h"

#include <stdio.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/audit.h"
#include "api/ui_files.h"

#define UI_CSP                                                                                                 \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "      \
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const struct {
    const char *ext;
    const char *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".json", "application/json"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
};

static const char *content_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof content_types / sizeof content_types[0]; i++)
        if (!strcmp(dot, content_types[i].ext))
            return content_types[i].type;
    return "application/octet-stream";
}

static const struct fl_ui_file *find(const char *rel)
{
    for (unsigned i = 0; i < fl_ui_nfiles; i++)
        if (!strcmp(fl_ui_files[i].path, rel))
            return &fl_ui_files[i];
    return NULL;
}

/* The headers every answer under /ui carries; returns the next free slot. */
static size_t security_headers(fl_req *r)
{
    size_t k = 0;
    r->resp_headers[k++] = "Content-Security-Policy";
    r->resp_headers[k++] = UI_CSP;
    r->resp_headers[k++] = "X-Content-Type-Options";
    r->resp_headers[k++] = "nosniff";
    r->resp_headers[k++] = "Referrer-Policy";
    r->resp_headers[k++] = "no-referrer";
    r->resp_headers[k++] = "X-Frame-Options";
    r->resp_headers[k++] = "DENY";
    r->resp_headers[k] = NULL;
    return k;
}

/* If-None-Match holds etag, alone or in a list (or is "*"). */
static bool etag_matches(const char *inm, const char *etag)
{
    if (!inm)
        return false;
    if (!strcmp(inm, "*"))
        return true;
    size_t n = strlen(etag);
    for (const char *p = strstr(inm, etag); p; p = strstr(p + 1, etag)) {
        char after = p[n];
        if (after == 0 || after == ',' || after == ' ')
            return true;
    }
    return false;
}

bool fl_ui_handle(fl_req *r)
{
    const char *path = r->path ? r->path : "";
    if (strcmp(path, "/ui") && strncmp(path, "/ui/", 4))
        return false;
    r->verb = "GET";
    snprintf(r->resource, sizeof r->resource, "ui");
    fl_audit_nonresource(r->audit, r->method, path);
    size_t k = security_headers(r);
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
        fl_resp_status(r, 405, "MethodNotAllowed", NULL, NULL, "the dashboard's files are read with GET only");
        return true;
    }
    if (!strcmp(path, "/ui")) { /* relative links in the page resolve under /ui/ */
        r->resp_headers[k++] = "Location";
        r->resp_headers[k++] = "/ui/";
        r->resp_headers[k] = NULL;
        fl_resp_raw(r, 301, "", 0);
        r->resp_type = "text/plain; charset=utf-8";
        return true;
    }
    const char *rel = path + 4;
    const struct fl_ui_file *f = find(*rel ? rel : "index.html");
    if (!f) {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the dashboard has no file %.200s", path);
        return true;
    }
    r->resp_headers[k++] = "ETag";
    r->resp_headers[k++] = f->etag;
    r->resp_headers[k] = NULL;
    if (etag_matches(r->if_none_match, f->etag)) {
        fl_resp_raw(r, 304, "", 0);
    } else {
        fl_resp_raw(r, 200, f->data, f->len);
    }
    r->resp_type = content_type(f->path);
    return true;
}
