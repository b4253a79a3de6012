/* timefmt.h - wall-clock time as Kubernetes writes it: metav1.Time ("2024-05-01T10:00:00Z"),
 * with milliseconds when asked, and back.
 *
 * Pure functions over caller buffers (except the two that read a clock): any thread. */
#ifndef FL_TIMEFMT_H
#define FL_TIMEFMT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define FL_TIME_BUF 40

/* Milliseconds since the epoch, from CLOCK_REALTIME. */
int64_t fl_time_now_ms(void);
/* Milliseconds from CLOCK_MONOTONIC: for durations and deadlines, which a change of the
 * wall clock must not stretch or cut short. */
int64_t fl_time_mono_ms(void);
/* Nanoseconds from CLOCK_MONOTONIC: for timing short work (metrics' durations). */
int64_t fl_time_mono_ns(void);
/* The absolute time ms milliseconds from now on clock clk, for pthread_cond_timedwait. */
struct timespec fl_time_after(clockid_t clk, int64_t ms);
/* RFC 3339 in UTC into buf: seconds ("...:00Z") or, with millis, ".123Z". */
void fl_time_format(int64_t ms, bool millis, char buf[FL_TIME_BUF]);
/* Parse RFC 3339 (fraction and offset optional) into ms since the epoch; -1 if malformed or NULL. */
int64_t fl_time_parse(const char *s);

#endif
