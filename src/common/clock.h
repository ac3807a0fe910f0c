/* clock.h — the two clocks: wall time (what is stored and shown) and
 * monotonic time (what durations and timers are measured with). */
#ifndef GF_CLOCK_H
#define GF_CLOCK_H

#include <sys/time.h>

double now_real(void);	/* CLOCK_REALTIME, seconds since the epoch */
double now_mono(void);	/* CLOCK_MONOTONIC, seconds */

/* secs (>= 0) as a timer's timeval (event_add). */
struct timeval gf_timeval(double secs);

#endif
