/* file.c - whole-file reads and atomic whole-file writes (see file.h). */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* fsync the directory holding path so a rename into it survives a crash. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? (slash == path ? fl_strdup("/") : fl_strndup(path, (size_t)(slash - path)))
                      : fl_strdup(".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int fl_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    char *tmp = fl_asprintf("%s.tmp.%ld", path, (long)getpid());
    int rc = FL_EIO, saved = 0;
    (void)unlink(tmp); /* a leftover from a crashed run with the same pid */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        saved = errno;
        goto out;
    }
    if (fchmod(fd, mode) < 0)
        goto fail_fd;
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            goto fail_fd;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) < 0)
        goto fail_fd;
    if (close(fd) < 0) {
        fd = -1;
        goto fail_fd;
    }
    fd = -1;
    if (rename(tmp, path) < 0)
        goto fail_fd;
    sync_parent(path);
    rc = 0;
    goto out;

fail_fd:
    saved = errno;
    if (fd >= 0)
        close(fd);
    (void)unlink(tmp);
out:
    free(tmp);
    if (rc)
        errno = saved;
    return rc;
}
