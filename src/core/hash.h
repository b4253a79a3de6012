/* hash.h - the string hash the in-memory tables share (work queue, member watches, member
 * clients): 64-bit FNV-1a, small and good enough for keys that are names. Pure: any thread. */
#ifndef FL_HASH_H
#define FL_HASH_H

#include <stdint.h>

static inline uint64_t fl_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

#endif
