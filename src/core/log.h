/* log.h - one-line logging to stderr, as klog-like text or as JSON.
 *
 * Every line has a level (error, warn, info, debug) and the klog verbosity that shows it:
 * error, warn and info lines are V(0), debug lines V(FL_LOG_DEBUG_V) = V(2). What is shown:
 *   - FLOTILLA_LOG (error|warn|info|debug; default info), read by fl_log_init;
 *   - the command line's -v N (fl_log_configure), which, when given, wins over FLOTILLA_LOG:
 *     every error, warn and info line, plus the lines of verbosity N or less (N >= 2: debug).
 *     FLOTILLA_LOG=debug is -v 2; FLOTILLA_LOG=warn or error has no -v equivalent.
 * The format is text unless --logging-format=json (fl_log_configure):
 *   text: "I 05:07:20.284 module: message" (E, W, I, D; UTC time of day; a line break in the
 *         message written as \n or \r);
 *   json: {"ts":"2026-12-07T05:07:20.284Z","level":"info","v":0,"component":"module","msg":"message"}
 *         with the message escaped (control characters as \n, \t or \u00XX; invalid UTF-8 as
 *         U+FFFD), one object per line.
 * A line is at most FL_LOG_LINE_MAX bytes (a longer message is cut at a character boundary)
 * and goes out in one write(2) to fd 2, so lines from different threads never interleave. */
#ifndef FL_LOG_H
#define FL_LOG_H

#include <stddef.h>

enum { FL_LOG_ERROR = 0, FL_LOG_WARN = 1, FL_LOG_INFO = 2, FL_LOG_DEBUG = 3 };

/* The klog verbosity of a debug line, and the longest line written, its newline included
 * (PIPE_BUF: a write to a pipe of at most this much is never split). */
#define FL_LOG_DEBUG_V 2
#define FL_LOG_LINE_MAX 4096

/* (Re)read FLOTILLA_LOG and go back to the text format: main calls it once, before any
 * thread starts. fl_log and fl_log_enabled call it on first use when nobody has. */
void fl_log_init(void);

/* Apply the command-line flags, before any thread starts: format "text" or "json" and
 * verbosity a whole number 0 or more (either NULL: not given, left as it is). Returns 0, or
 * -1 with nothing changed and one line in why (at most whylen bytes) naming the flag and the
 * value refused, e.g. `--logging-format: expected text or json, not "xml"`. */
int fl_log_configure(const char *format, const char *verbosity, char *why, size_t whylen);

/* Would a line of this level be written? Any thread. */
int fl_log_enabled(int level);

/* Write one line of this level for module (the JSON "component"). Any thread. */
void fl_log(int level, const char *module, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
