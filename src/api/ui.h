/* ui.h - the dashboard's assets at /ui/ (ui.c).
 *
 * The server serves a web page at /ui/ on the API's port: HTML, JavaScript modules and CSS
 * compiled into the binary from ui/ (ui/embed.cmake). The assets are public, like /version:
 * they hold no data. Everything the page shows it reads from the Kubernetes API with the
 * user's own credentials (a bearer token, or the browser's client certificate), so RBAC
 * applies exactly as it does for kubectl (docs/dashboard.md). */
#ifndef FL_API_UI_H
#define FL_API_UI_H

#include <stdbool.h>

#include "api/api.h"

/* True when r's path is the dashboard's (/ui or under /ui/): then r is answered — an asset
 * (200, or 304 when If-None-Match names its ETag), /ui redirected to /ui/, 404 for a file the
 * binary does not have, 405 for a method other than GET and HEAD. False otherwise, r
 * untouched. Any thread; the assets are read-only. */
bool fl_ui_handle(fl_req *r);

#endif
