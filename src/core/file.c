/* file.c - whole-file reads (see file.h). */
#include "core/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/err.h"
#include "core/mem.h"

int fl_read_file(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? FL_ENOTFOUND : FL_EIO;
    size_t cap = 4096, n = 0;
    char *buf = fl_malloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (max && cap >= max) {
                fclose(f);
                free(buf);
                errno = EFBIG;
                return FL_EIO;
            }
            cap *= 2;
            buf = fl_realloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return FL_EIO;
    }
    buf[n] = 0;
    *out = buf;
    if (len)
        *len = n;
    return 0;
}
