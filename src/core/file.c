/* file.c - whole-file reads and atomic whole-file writes, and the guards of a data directory:
 * its secrets private to their user, one owning process at a time (see file.h). */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/strbuf.h"

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

int fl_file_check_private(const char *const *paths, char **err)
{
    *err = NULL;
    fl_strbuf open_to_others = FL_STRBUF_INIT; /* the paths after "chmod 600" */
    const char *first = NULL;
    mode_t first_mode = 0;
    for (size_t i = 0; paths[i]; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            if (errno == ENOENT)
                continue;
            *err = fl_asprintf("cannot examine %s: %s", paths[i], strerror(errno));
            fl_strbuf_close(&open_to_others);
            return FL_EIO;
        }
        if (!(st.st_mode & 077))
            continue;
        if (!first) {
            first = paths[i];
            first_mode = st.st_mode & 07777;
        }
        fl_strbuf_printf(&open_to_others, " %s", paths[i]);
    }
    if (!first)
        return 0;
    /* Writable-only by others is as bad (a key can be swapped), but rarer: say what it is. */
    *err = fl_asprintf("%s is %s by others (mode %04o); run: chmod 600%s", first,
                       first_mode & 044 ? "readable" : "accessible", (unsigned)first_mode,
                       fl_strbuf_str(&open_to_others));
    fl_strbuf_close(&open_to_others);
    return FL_EINVAL;
}

int fl_file_private_dir(const char *dir, mode_t *was)
{
    *was = 0;
    struct stat st;
    if (stat(dir, &st) != 0)
        return FL_EIO;
    *was = st.st_mode & 07777;
    if (!(st.st_mode & 077))
        return 0;
    return chmod(dir, 0700) == 0 ? 0 : FL_EIO;
}

/* Read the pid a lock's holder wrote: 0 when there is none (yet). */
static long read_holder(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? pid : 0;
}

int fl_file_lock(const char *path, int *fd, long *holder)
{
    *fd = -1;
    *holder = 0;
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0)
        return FL_EIO;
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e != EWOULDBLOCK) {
            close(f);
            errno = e;
            return FL_EIO;
        }
        /* The holder writes its pid right after it locks: give it a moment to. */
        for (int i = 0; i < 20 && !(*holder = read_holder(f)); i++)
            usleep(10 * 1000);
        close(f);
        return FL_EEXIST;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)n, 0) != n) {
        int e = errno;
        close(f);
        errno = e;
        return FL_EIO;
    }
    *fd = f;
    return 0;
}
