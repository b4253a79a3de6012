/* random.h - random bytes from the kernel, UUIDs made of them, and the delays of periodic
 * work spread by them.
 *
 * Periodic work that many peers do on the same period (a fleet of agents renewing leases and
 * reporting status every 10 s, the server probing 100 members) fires together forever when
 * the peers start together, as they do after `flotilla up`, a join of many clusters or a
 * restart. Each tick then lands as a burst on whatever else the server is doing at that
 * moment. fl_random_phase_ms() places a peer's next tick anywhere in the period, once, so
 * that the ticks spread over it; fl_jittered_ms() keeps them from drifting back together.
 *
 * Any thread. */
#ifndef FL_RANDOM_H
#define FL_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* n bytes from getrandom(); should the kernel refuse, from rand() (never fails). */
void fl_random_bytes(void *buf, size_t n);
/* Uniform in [0, n); 0 when n <= 0. */
int64_t fl_random_below(int64_t n);
/* A delay uniform in [1, period_ms]: the first wait of a periodic task that has just run
 * once, so that peers started together spread their ticks over the whole period. */
int64_t fl_random_phase_ms(int64_t period_ms);
/* period_ms less up to a tenth of it at random: never later than the period (a lease
 * renewed on it stays valid), never the same twice. */
int64_t fl_jittered_ms(int64_t period_ms);
/* A random (version 4) UUID as 36 lowercase characters and a NUL: metadata.uid. */
void fl_random_uuid4(char buf[37]);

#endif
