/* build.h - which build of flotilla is running, for state that only the same build may
 * trust (the server's reconciled revision: docs/internals/propagation.md). Any thread. */
#ifndef FL_BUILD_H
#define FL_BUILD_H

#include <stdint.h>

/* A number naming this build: the linker's GNU build-id note of the running executable,
 * hashed (a positive int64, so that it fits a store note). 0 when the executable has no such
 * note: then no two builds can be told apart, and callers must trust nothing by it. */
int64_t fl_build_id(void);

#endif
