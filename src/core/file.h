/* file.h - reading a whole small file (certificates, tokens, kubeconfigs). */
#ifndef FL_FILE_H
#define FL_FILE_H

#include <stddef.h>

/* Read the file at path into a NUL-terminated heap buffer. max: the largest size accepted
 * (0 = no limit; larger files fail with errno EFBIG). Returns 0, FL_ENOTFOUND when it does
 * not exist, FL_EIO otherwise (errno kept). *out is set on every path (NULL on failure);
 * *len (when len is not NULL) receives the size. Any thread. */
int fl_read_file(const char *path, size_t max, char **out, size_t *len);

#endif
