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

/* The key/value pairs of one line: keys made safe to write unquoted and distinct from the five
 * fixed JSON members and from each other, values as given ("" for NULL). */
typedef struct {
    size_t n;
    char key[FL_LOG_KV_MAX][FL_LOG_KEY_MAX + 3]; /* "x_", the key, its NUL */
    const char *val[FL_LOG_KV_MAX];
    size_t need; /* the bytes the pairs take unescaped, separators included */
} kvset;

static void kv_add(kvset *s, const char *key, const char *val)
{
    static const char *const fixed[] = {"ts", "level", "v", "component", "msg"};
    if (!key || !*key || s->n == FL_LOG_KV_MAX)
        return;
    char *k = s->key[s->n];
    size_t n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(key, fixed[i])) {
            memcpy(k, "x_", 2); /* never a second "level" a parser would take instead */
            n = 2;
        }
    size_t start = n;
    for (const char *p = key; *p && n - start < FL_LOG_KEY_MAX; p++) {
        char c = *p;
        int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("_.-/", c);
        k[n++] = safe ? c : '_';
    }
    k[n] = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->key[i], k))
            return; /* the first value of a key stands */
    s->val[s->n++] = val ? val : "";
    s->need += n + strlen(val ? val : "") + 6; /* ,"k":"v" or  k="v" */
}

/* How much of the room left after the header the message may take: all but what the pairs
 * need, the pairs keeping at most half of it. */
static size_t msg_room(size_t room, const kvset *kv)
{
    return room - (kv->need < room / 2 ? kv->need : room / 2);
}

/* Render one JSON line (newline included) into line[FL_LOG_LINE_MAX]; returns its length. */
static size_t render_json(char *line, const struct timespec *ts, const struct tm *tm, int level, const char *module,
                          const char *msg, const kvset *kv)
{
    static const char *levels[] = {"error", "warn", "info", "debug"};
    const size_t end = FL_LOG_LINE_MAX - 2; /* "}\n" */
    int h = snprintf(line, FL_LOG_LINE_MAX,
                     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"v\":%d,\"component\":\"",
                     tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec,
                     ts->tv_nsec / 1000000, levels[level], level_v(level));
    size_t n = h > 0 ? (size_t)h : 0; /* short: at most ~120 bytes */
    n += json_escape(line + n, COMPONENT_MAX, module);
    memcpy(line + n, "\",\"msg\":\"", 9);
    n += 9;
    n += json_escape(line + n, msg_room(end - n - 1, kv), msg);
    line[n++] = '"';
    for (size_t i = 0; i < kv->n; i++) {
        size_t klen = strlen(kv->key[i]);
        if (n + klen + 6 > end) /* ,"key":"" */
            break;
        line[n++] = ',';
        line[n++] = '"';
        memcpy(line + n, kv->key[i], klen); /* only characters that need no escaping */
        n += klen;
        memcpy(line + n, "\":\"", 3);
        n += 3;
        n += json_escape(line + n, end - n - 1, kv->val[i]);
        line[n++] = '"';
    }
    memcpy(line + n, "}\n", 2);
    return n + 2;
}

/* Render one text line, as the logger always wrote them: "I 05:07:20.284 module: message",
 * then the pairs as key="value" (the value escaped as in JSON). A line break inside the
 * message is written as \n or \r, so that an entry stays one line there too. */
static size_t render_text(char *line, const struct timespec *ts, const struct tm *tm, int level, const char *module,
                          const char *msg, const kvset *kv)
{
    static const char *names[] = {"E", "W", "I", "D"};
    const size_t end = FL_LOG_LINE_MAX - 1; /* "\n" */
    int h = snprintf(line, FL_LOG_LINE_MAX, "%s %02d:%02d:%02d.%03ld %s: ", names[level], tm->tm_hour, tm->tm_min,
                     tm->tm_sec, ts->tv_nsec / 1000000, module);
    size_t n = h < 0 ? 0 : (size_t)h < FL_LOG_LINE_MAX / 2 ? (size_t)h : FL_LOG_LINE_MAX / 2;
    size_t msg_end = n + msg_room(end - n, kv);
    for (const char *p = msg; *p && n + 2 <= msg_end; p++) {
        if (*p == '\n' || *p == '\r') {
            line[n++] = '\\';
            line[n++] = *p == '\n' ? 'n' : 'r';
        } else {
            line[n++] = *p;
        }
    }
    for (size_t i = 0; i < kv->n; i++) {
        size_t klen = strlen(kv->key[i]);
        if (n + klen + 4 > end) /*  key="" */
            break;
        line[n++] = ' ';
        memcpy(line + n, kv->key[i], klen);
        n += klen;
        line[n++] = '=';
        line[n++] = '"';
        n += json_escape(line + n, end - n - 1, kv->val[i]);
        line[n++] = '"';
    }
    line[n++] = '\n';
    return n;
}

/* Format and write one line whose message is already formatted. */
static void emit(int level, const char *module, const char *msg, const kvset *kv)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[FL_LOG_LINE_MAX];
    if (!module)
        module = "";
    if (!msg)
        msg = "";
    size_t n = log_json ? render_json(line, &ts, &tm, level, module, msg, kv)
                        : render_text(line, &ts, &tm, level, module, msg, kv);
    /* one write: a pipe or a file opened O_APPEND takes it whole; retried only when a
     * signal came before anything was written. The caller's errno is left as it was. */
    int saved = errno;
    ssize_t w;
    do
        w = write(STDERR_FILENO, line, n);
    while (w < 0 && errno == EINTR);
    errno = saved;
}

/* fl_log and fl_log_kvf: the message formatted (cut at MSG_MAX bytes), with npairs / 2
 * key-value pairs from pairs (NULL when npairs is 0). */
static void emit_fmt(int level, const char *module, const char *const *pairs, size_t npairs, const char *fmt,
                     va_list ap) __attribute__((format(printf, 5, 0)));
static void emit_fmt(int level, const char *module, const char *const *pairs, size_t npairs, const char *fmt,
                     va_list ap)
{
    char msg[MSG_MAX];
    if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
        msg[0] = 0;
    kvset kv;
    kv.n = kv.need = 0;
    for (size_t i = 0; pairs && i + 1 < npairs; i += 2)
        kv_add(&kv, pairs[i], pairs[i + 1]);
    emit(level, module, msg, &kv);
}

void fl_log(int level, const char *module, const char *fmt, ...)
{
    if (!fl_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    emit_fmt(level, module, NULL, 0, fmt, ap);
    va_end(ap);
}

void fl_log_kv(int level, const char *module, const char *msg, ...)
{
    if (!fl_log_enabled(level))
        return;
    kvset kv;
    kv.n = kv.need = 0;
    va_list ap;
    va_start(ap, msg);
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;)
        kv_add(&kv, k, va_arg(ap, const char *));
    va_end(ap);
    char cut[MSG_MAX]; /* as long as fl_log's messages may be */
    if (msg && strlen(msg) >= sizeof cut) {
        memcpy(cut, msg, sizeof cut - 1);
        cut[sizeof cut - 1] = 0;
        msg = cut;
    }
    emit(level, module, msg, &kv);
}

void fl_log_kvf(int level, const char *module, const char *const *pairs, size_t npairs, const char *fmt, ...)
{
    if (!fl_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    emit_fmt(level, module, pairs, npairs, fmt, ap);
    va_end(ap);
}

const char *fl_log_obj(char *buf, size_t cap, const char *kind, const char *ns, const char *name)
{
    if (ns && *ns)
        snprintf(buf, cap, "%s/%s/%s", kind ? kind : "", ns, name ? name : "");
    else
        snprintf(buf, cap, "%s/%s", kind ? kind : "", name ? name : "");
    return buf;
}
