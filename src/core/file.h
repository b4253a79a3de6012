/* file.h - reading a whole small file (certificates, tokens, kubeconfigs), and writing one
 * so that a crash leaves either the old contents or the new, never half of them. */
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

#endif
