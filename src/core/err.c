/* err.c - text for FL_E* codes. */
#include "core/err.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

const char *fl_strerror(int rc)
{
    switch (rc) {
    case FL_OK: return "ok";
    case FL_ENOMEM: return "out of memory";
    case FL_EINVAL: return "invalid input";
    case FL_ENOTFOUND: return "not found";
    case FL_EEXIST: return "already exists";
    case FL_ECONFLICT: return "conflict: the object has been modified";
    case FL_EEXPIRED: return "revision is older than the compaction window";
    case FL_EIO: return "input/output error";
    case FL_ETIMEDOUT: return "timed out";
    case FL_ECLOSED: return "closed";
    case FL_ETOOBIG: return "too large";
    case FL_EUNSUPPORTED: return "not supported";
    case FL_EFENCED: return "this process no longer leads the controllers";
    case FL_ENOSPACE: return "the store is out of space";
    }
    return "unknown error";
}

void fl_err_vset(char **err, const char *where, const char *fmt, va_list ap)
{
    if (!err || *err)
        return;
    char *msg = fl_vasprintf(fmt, ap);
    *err = fl_asprintf("%s: %s", where, msg);
    free(msg);
}

char *fl_err_one_line(const char *s, size_t len, size_t max)
{
    bool cut = len > max;
    if (cut)
        len = max;
    char *out = fl_malloc(len + 4);
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
    strcpy(out + len, cut ? "..." : "");
    return out;
}
