/* ui_files.h - the dashboard's files (ui/), compiled into the binary.
 *
 * The definitions are generated at build time by ui/embed.cmake from the files under ui/
 * (one entry per file, in path order); ui.c is their only reader. Private to src/api/. */
#ifndef FL_API_UI_FILES_H
#define FL_API_UI_FILES_H

#include <stddef.h>

struct fl_ui_file {
    const char *path; /* relative to ui/, e.g. "index.html", "js/fleet.js" */
    const char *data; /* its bytes, NUL-terminated */
    size_t len;       /* without the NUL */
    const char *etag; /* a strong ETag, quoted: its content's hash */
};

/* fl_ui_nfiles entries, then one of zeros */
extern const struct fl_ui_file fl_ui_files[];
extern const unsigned fl_ui_nfiles;

#endif
