/* env.h - the FLOTILLA_* environment variables that tune intervals (tests and benchmarks
 * shorten them; docs/ names each where it is used). Any thread. */
#ifndef FL_ENV_H
#define FL_ENV_H

#include <stdint.h>

/* The value of the environment variable name as milliseconds, or def when it is unset or
 * empty. A value that is not a whole number of at least min is ignored with a warning
 * naming the variable, and def returned. */
int64_t fl_env_ms(const char *name, int64_t def, int64_t min);
/* The same for a count (the warning says so). */
int64_t fl_env_count(const char *name, int64_t def, int64_t min);

#endif
