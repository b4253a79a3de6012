/* log.c - stderr logger, text or JSON (see log.h).
 *
 * The settings are plain statics written before any thread starts (fl_log_init, then
 * fl_log_configure from the command line) and only read afterwards. A line is formatted
 * into a stack buffer and handed to write(2) whole: no lock, no stdio buffer, and a reader
 * of the log (a pipe, a file, a collector tailing it) never sees half a line or two lines
 * run together. */
#include "core/log.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What is shown: every line up to level log_sev among error, warn and info, and the lines
 * whose verbosity is log_v or less (a debug line is V(FL_LOG_DEBUG_V)). */
static int log_ready;
static int log_sev = FL_LOG_INFO;
static int log_v;
static int log_json;

/* The longest message kept (formatted, before escaping), and the most of a line the
 * component may take once escaped. */
#define MSG_MAX 2048
#define COMPONENT_MAX 128

void fl_log_init(void)
{
    const char *e = getenv("FLOTILLA_LOG");
    log_sev = FL_LOG_INFO;
    log_v = 0;
    log_json = 0;
    if (e) {
        if (!strcmp(e, "error"))
            log_sev = FL_LOG_ERROR;
        else if (!strcmp(e, "warn"))
            log_sev = FL_LOG_WARN;
        else if (!strcmp(e, "debug"))
            log_v = FL_LOG_DEBUG_V;
    }
    log_ready = 1;
}

int fl_log_configure(const char *format, const char *verbosity, char *why, size_t whylen)
{
    int json = log_json;
    if (format) {
        if (!strcmp(format, "text"))
            json = 0;
        else if (!strcmp(format, "json"))
            json = 1;
        else {
            snprintf(why, whylen, "--logging-format: expected text or json, not \"%s\"", format);
            return -1;
        }
    }
    long v = -1;
    if (verbosity) {
        char *end;
        errno = 0;
        v = strtol(verbosity, &end, 10);
        if (errno || end == verbosity || *end || verbosity[0] == '-' || verbosity[0] == '+' || v > INT_MAX) {
            snprintf(why, whylen, "-v: expected a verbosity, a whole number 0 or more, not \"%s\"", verbosity);
            return -1;
        }
    }
    if (!log_ready)
        fl_log_init();
    log_json = json;
    if (v >= 0) {
        /* the flag wins over FLOTILLA_LOG: error, warn and info always, then by verbosity */
        log_sev = FL_LOG_INFO;
        log_v = (int)v;
    }
    return 0;
}

/* The verbosity a line of this level carries. */
static int level_v(int level)
{
    return level == FL_LOG_DEBUG ? FL_LOG_DEBUG_V : 0;
}

int fl_log_enabled(int level)
{
    if (!log_ready)
        fl_log_init();
    if (level < FL_LOG_ERROR || level > FL_LOG_DEBUG)
        return 0;
    return level <= FL_LOG_INFO ? level <= log_sev : level_v(level) <= log_v;
}

/* The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, surrogates or
 * code points past U+10FFFF) that s starts with, or 0 when it starts none. A NUL stops it. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0], cp;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
        return 0;
    if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))
        return 0;
    return n;
}

/* Write s as the inside of a JSON string into out, at most cap bytes, stopping before a
 * character whose escaped form would not fit whole. Quotes, backslashes and control
 * characters are escaped; each byte that is not part of well-formed UTF-8 becomes U+FFFD.
 * Returns the bytes written. */
static size_t json_escape(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        char esc[8] = "\\";
        const char *add = esc, *named;
        size_t len, take = 1;
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            esc[1] = (char)c;
            len = 2;
        } else if (c < 0x20 && (named = strchr("\nn\tt\rr\bb\ff", (int)c)) != NULL) {
            esc[1] = named[1]; /* the letter after that control character in the list */
            len = 2;
        } else if (c < 0x20 || c == 0x7F) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            len = 6;
        } else if ((take = utf8_len(p)) > 0) {
            add = (const char *)p;
            len = take;
        } else {
            add = "\xEF\xBF\xBD"; /* U+FFFD REPLACEMENT CHARACTER, for this one byte */
            len = 3;
            take = 1;
        }
        if (n + len > cap)
            break;
        memcpy(out + n, add, len);
        n += len;
        p += take;
    }
    return n;
}

/* Render one JSON line (newline included) into line[FL_LOG_LINE_MAX]; returns its length. */
static size_t render_json(char *line, const struct timespec *ts, const struct tm *tm, int level,
                          const char *module, const char *msg)
{
    static const char *levels[] = {"error", "warn", "info", "debug"};
    static const char tail[] = "\"}\n";
    int h = snprintf(line, FL_LOG_LINE_MAX,
                     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"v\":%d,\"component\":\"",
                     tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec,
                     ts->tv_nsec / 1000000, levels[level], level_v(level));
    size_t n = h > 0 ? (size_t)h : 0; /* short: at most ~120 bytes */
    n += json_escape(line + n, COMPONENT_MAX, module);
    memcpy(line + n, "\",\"msg\":\"", 9);
    n += 9;
    n += json_escape(line + n, FL_LOG_LINE_MAX - n - (sizeof tail - 1), msg);
    memcpy(line + n, tail, sizeof tail - 1);
    return n + sizeof tail - 1;
}

/* Render one text line, as the logger always wrote them: "I 05:07:20.284 module: message".
 * A line break inside the message is written as \n or \r, so that an entry stays one line
 * there too. */
static size_t render_text(char *line, const struct timespec *ts, const struct tm *tm, int level,
                          const char *module, const char *msg)
{
    static const char *names[] = {"E", "W", "I", "D"};
    int h = snprintf(line, FL_LOG_LINE_MAX, "%s %02d:%02d:%02d.%03ld %s: ", names[level], tm->tm_hour, tm->tm_min,
                     tm->tm_sec, ts->tv_nsec / 1000000, module);
    size_t n = h < 0 ? 0 : (size_t)h < FL_LOG_LINE_MAX / 2 ? (size_t)h : FL_LOG_LINE_MAX / 2;
    for (const char *p = msg; *p && n < FL_LOG_LINE_MAX - 3; p++) {
        if (*p == '\n' || *p == '\r') {
            line[n++] = '\\';
            line[n++] = *p == '\n' ? 'n' : 'r';
        } else {
            line[n++] = *p;
        }
    }
    line[n++] = '\n';
    return n;
}

void fl_log(int level, const char *module, const char *fmt, ...)
{
    if (!fl_log_enabled(level))
        return;
    char msg[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
        msg[0] = 0;
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[FL_LOG_LINE_MAX];
    if (!module)
        module = "";
    size_t n = log_json ? render_json(line, &ts, &tm, level, module, msg)
                        : render_text(line, &ts, &tm, level, module, msg);
    /* one write: a pipe or a file opened O_APPEND takes it whole; retried only when a
     * signal came before anything was written. The caller's errno is left as it was. */
    int saved = errno;
    ssize_t w;
    do
        w = write(STDERR_FILENO, line, n);
    while (w < 0 && errno == EINTR);
    errno = saved;
}
