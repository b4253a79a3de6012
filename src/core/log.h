/* log.h - one-line structured-ish logging to stderr.
 *
 * Level comes from FLOTILLA_LOG (error|warn|info|debug; default info). Lines are
 * "LEVEL time module: message". Any thread; each line is written atomically. */
#ifndef FL_LOG_H
#define FL_LOG_H

enum { FL_LOG_ERROR = 0, FL_LOG_WARN = 1, FL_LOG_INFO = 2, FL_LOG_DEBUG = 3 };

void fl_log(int level, const char *module, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int fl_log_enabled(int level);

#endif
