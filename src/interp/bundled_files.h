/* bundled_files.h - the bundled customizations' YAML text, compiled into the binary.
 *
 * The definitions are generated at build time by src/interp/bundled/embed.cmake from
 * src/interp/bundled/<file>.yaml (one entry per file, in name order); bundled.c is their only
 * reader. Private to src/interp/. */
#ifndef FL_INTERP_BUNDLED_FILES_H
#define FL_INTERP_BUNDLED_FILES_H

#include <stddef.h>

struct fl_bundled_file {
    const char *name; /* file name, e.g. "kruise-cloneset.yaml" */
    const char *stem; /* the name without ".yaml": the test data folder's name */
    const char *text; /* its bytes, NUL-terminated */
    size_t len;       /* without the NUL */
};

extern const struct fl_bundled_file fl_bundled_files[];
extern const unsigned fl_bundled_nfiles;

#endif
