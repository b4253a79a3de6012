/* file.h - reading a whole small file (certificates, tokens, kubeconfigs), and writing one
 * so that a crash leaves either the old contents or the new, never half of them; and what a
 * process that owns a data directory needs of it: the directory and its secrets private to
 * their user, and one owner at a time (a lock). */
#ifndef FL_FILE_H
#define FL_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Read the file at path into a NUL-terminated heap buffer. max: the largest size accepted
 * (0 = no limit; larger files fail with errno EFBIG). Returns 0, FL_ENOTFOUND when it does
 * not exist, FL_EIO otherwise (errno kept). *out is set on every path (NULL on failure);
 * *len (when len is not NULL) receives the size. Any thread. */
int fl_read_file(const char *path, size_t max, char **out, size_t *len);

/* Write data to path atomically with exactly the given mode (independent of umask):
 * temp file beside it, fsync, rename, fsync the directory. Returns 0 or FL_EIO with
 * errno describing the failure. Any thread (two writers of one path race on the rename,
 * and the last one wins whole). */
int fl_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* Check that none of paths (NULL-terminated; a missing file is fine) grants its group or
 * others any access. Returns 0; FL_EINVAL when one does, with *err one heap line naming the
 * first, its mode and the command that fixes them all ("P is readable by others (mode 0644);
 * run: chmod 600 P Q"); FL_EIO when one cannot be examined (*err says which). *err is NULL
 * on success. Reads only. Any thread. */
int fl_file_check_private(const char *const *paths, char **err);

/* Make the directory dir (which exists) private to its owner: when its mode grants the group
 * or others anything, it becomes 0700. *was receives the mode found. Returns 0, or FL_EIO
 * (errno kept) when it cannot be examined or changed (not ours, say). Any thread. */
int fl_file_private_dir(const char *dir, mode_t *was);

/* Take an exclusive lock on the file path (created 0600 when missing) for as long as *fd stays
 * open: close(*fd) releases it, and so does the kernel when the process ends, kill -9
 * included, so a crash never leaves a stale lock. On success the file holds this process's
 * pid and *fd is its descriptor (close-on-exec), *holder 0. FL_EEXIST when another process
 * holds it: *holder is the pid written there (0 when it has not written it yet), *fd -1.
 * FL_EIO (errno kept) when the file cannot be opened, *fd -1. Advisory (flock): it keeps out
 * the processes that take it, not other writers. Any thread. */
int fl_file_lock(const char *path, int *fd, long *holder);

#endif
