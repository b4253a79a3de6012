/* log.h - one-line logging to stderr, as klog-like text or as JSON.
 *
 * Every line has a level (error, warn, info, debug) and the klog verbosity that shows it:
 * error, warn and info lines are V(0), debug lines V(FL_LOG_DEBUG_V) = V(2). What is shown:
 *   - FLOTILLA_LOG (error|warn|info|debug; default info), read by fl_log_init;
 *   - the command line's -v N (fl_log_configure), which, when given, wins over FLOTILLA_LOG:
 *     every error, warn and info line, plus the lines of verbosity N or less (N >= 2: debug).
 *     FLOTILLA_LOG=debug is -v 2; FLOTILLA_LOG=warn or error has no -v equivalent.
 * A line may carry key/value pairs after its message (fl_log_kv, fl_log_kvf), as klog's
 * structured calls (InfoS, ErrorS) do. A line about an object names it with the key "object"
 * and the value "Kind/namespace/name" ("Kind/name" when cluster-scoped; FL_LOG_OBJ), and the
 * member cluster it is in with "cluster"; an error's text goes under "err".
 * The format is text unless --logging-format=json (fl_log_configure):
 *   text: "I 05:07:20.284 module: message key="value" ..." (E, W, I, D; UTC time of day; a line
 *         break in the message written as \n or \r; each value quoted, with quotes,
 *         backslashes and control characters escaped);
 *   json: {"ts":"2026-12-07T05:07:20.284Z","level":"info","v":0,"component":"module","msg":"message",
 *         "key":"value",...} with the strings escaped (control characters as \n, \t or \u00XX;
 *         invalid UTF-8 as U+FFFD), one object per line; a pair's key is never one of the five
 *         fixed members (a key "level" is written "x_level").
 * A line is at most FL_LOG_LINE_MAX bytes (a longer message or value is cut at a character
 * boundary; the pairs keep up to half the line) and goes out in one write(2) to fd 2, so
 * lines from different threads never interleave. Nothing is allocated. */
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

/* The most key/value pairs a line carries (more are left out), and the longest key kept. */
#define FL_LOG_KV_MAX 16
#define FL_LOG_KEY_MAX 64

/* Write one line of this level with the message msg (as is, not a format) followed by
 * key/value pairs: key, value, key, value, ..., NULL. Keys are short names chosen by the
 * caller ([A-Za-z0-9_.-/]; any other byte is written as '_'); a NULL value is written "".
 * A key given twice keeps its first value. Any thread. E.g.
 *   fl_log_kv(FL_LOG_WARN, "execution", "writing the Work status failed",
 *             "object", FL_LOG_OBJ("Work", ns, name), "err", why, NULL); */
void fl_log_kv(int level, const char *module, const char *msg, ...) __attribute__((sentinel));

/* The same with a printf-style message, the pairs given as an array of nkv strings (key,
 * value, ...), which FL_LOG_KV(...) writes as its two arguments:
 *   fl_log_kvf(FL_LOG_INFO, "cluster", FL_LOG_KV("object", FL_LOG_OBJ("Cluster", NULL, name)),
 *              "probed in %lld ms", ms); */
void fl_log_kvf(int level, const char *module, const char *const *kv, size_t nkv, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The array of key/value strings for fl_log_kvf (living until the end of the enclosing block)
 * and its length: two arguments. */
#define FL_LOG_KV(...)                                                                                                 \
    (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

/* An object's name as a line shows it: "Kind/namespace/name", or "Kind/name" when ns is NULL
 * or empty (cluster-scoped). Written into buf (cap bytes, cut when longer; cap > 0) and
 * returned. Any thread. FL_LOG_OBJ does it in a buffer living until the end of the
 * enclosing block, for an argument of fl_log_kv or FL_LOG_KV. */
#define FL_LOG_OBJ_MAX 400
const char *fl_log_obj(char *buf, size_t cap, const char *kind, const char *ns, const char *name);
#define FL_LOG_OBJ(kind, ns, name) fl_log_obj((char[FL_LOG_OBJ_MAX]){0}, FL_LOG_OBJ_MAX, (kind), (ns), (name))

#endif
