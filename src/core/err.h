/* err.h - the error codes every Flotilla module returns.
 *
 * Functions return int: 0 on success, a negative FL_E* code on failure. The API
 * layer maps codes to Kubernetes Status reasons (see src/api/status.c); the CLI
 * maps them to one readable line with fl_strerror(). */
#ifndef FL_ERR_H
#define FL_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum {
    FL_OK = 0,
    FL_ENOMEM = -1,      /* never returned in practice: allocation failure aborts (mem.h) */
    FL_EINVAL = -2,      /* malformed input: caller's bytes are wrong */
    FL_ENOTFOUND = -3,   /* key/object does not exist */
    FL_EEXIST = -4,      /* create of a key that exists */
    FL_ECONFLICT = -5,   /* compare-and-swap lost: revision did not match */
    FL_EEXPIRED = -6,    /* revision older than the compaction window */
    FL_EIO = -7,         /* storage or socket failure */
    FL_ETIMEDOUT = -8,   /* a bounded wait ran out */
    FL_ECLOSED = -9,     /* the object (store, watch) is shutting down */
    FL_ETOOBIG = -10,    /* input exceeds a size limit */
    FL_EUNSUPPORTED = -11, /* valid request we deliberately do not support */
    FL_EFENCED = -12,     /* a write fenced on a lead this process no longer holds (store.h) */
    FL_ENOSPACE = -13     /* the store is out of space (etcd's space quota alarm) */
};

/* Static English text for a code; never NULL. Any thread. */
const char *fl_strerror(int rc);

/* What to tell a user about a failure: message when it says something (a server's
 * Status.message, fl_client_error.message), else fl_strerror(rc). Never NULL. */
static inline const char *fl_errmsg(const char *message, int rc)
{
    return message && message[0] ? message : fl_strerror(rc);
}

/* Record the first error of a run for the user: when err is not NULL and *err is still NULL,
 * *err becomes "<where>: <message fmt makes>" (heap; the caller frees it). A later call
 * keeps the first, which names where the input first went wrong. For parsers and appliers
 * that hand back one readable line (a patch, a kubeconfig, a Lua value). Any thread. */
void fl_err_vset(char **err, const char *where, const char *fmt, va_list ap);

/* len bytes of s made fit to quote in a one-line message: control characters become spaces,
 * and at most max bytes are kept ("..." marks a cut). A heap string; never NULL. For text a
 * user or a remote party sent (a value, a webhook's message). Any thread. */
char *fl_err_one_line(const char *s, size_t len, size_t max);

#endif
