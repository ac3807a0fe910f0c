/* clock.c — now_real, now_mono and gf_timeval (clock.h). */
#include "clock.h"

#include <time.h>

double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct timeval gf_timeval(double secs)
{
	struct timeval tv = { (time_t)secs, 0 };

	tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
	return tv;
}
