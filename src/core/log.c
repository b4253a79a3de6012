/* log.c - stderr logger (see log.h). */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int log_level = -1;

int fl_log_enabled(int level)
{
    if (log_level < 0) {
        const char *e = getenv("FLOTILLA_LOG");
        int lv = FL_LOG_INFO;
        if (e) {
            if (!strcmp(e, "error")) lv = FL_LOG_ERROR;
            else if (!strcmp(e, "warn")) lv = FL_LOG_WARN;
            else if (!strcmp(e, "debug")) lv = FL_LOG_DEBUG;
        }
        log_level = lv;
    }
    return level <= log_level;
}

void fl_log(int level, const char *module, const char *fmt, ...)
{
    static const char *names[] = {"E", "W", "I", "D"};
    if (!fl_log_enabled(level))
        return;
    char line[2048];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%s %02d:%02d:%02d.%03ld %s: ", names[level], tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, module);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line - 1)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    fwrite(line, 1, (size_t)n, stderr);
}
