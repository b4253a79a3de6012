/* env.c - see env.h. */
#include "core/env.h"

#include <stdlib.h>

#include "core/log.h"

int64_t fl_env_ms(const char *name, int64_t def, int64_t min)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || n < min) {
        fl_log(FL_LOG_WARN, "env", "ignoring %s=%s: not a number of milliseconds of at least %lld", name, v,
               (long long)min);
        return def;
    }
    return n;
}
