/* env.c - see env.h. */
#include "core/env.h"

#include <stdlib.h>

#include "core/log.h"

static int64_t env_whole(const char *name, int64_t def, int64_t min, const char *what)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || n < min) {
        fl_log(FL_LOG_WARN, "env", "ignoring %s=%s: not %s of at least %lld", name, v, what, (long long)min);
        return def;
    }
    return n;
}

int64_t fl_env_ms(const char *name, int64_t def, int64_t min)
{
    return env_whole(name, def, min, "a number of milliseconds");
}

int64_t fl_env_count(const char *name, int64_t def, int64_t min)
{
    return env_whole(name, def, min, "a whole number");
}
