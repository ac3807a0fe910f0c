/* idle.h — the idle clock of idle reclaim ([gpu.idle_reclaim]): pure, one
 * step per GPU sample, unit-tested (tests/unit/test_idle.c). share/idle.c
 * feeds it each running job's GPUs from the NVML poll and acts on what it
 * says.
 *
 * A sample is idle when every one of the job's GPUs is below the
 * threshold (utilisation known, util < threshold) and the memory its
 * processes use on each GPU is what it was at the previous sample. Any
 * other sample (a GPU busy, its utilisation unknown, memory changed, no
 * GPU) is activity: the clock restarts and a warning is withdrawn.
 *
 * The clock starts at the first idle sample; `after` seconds later the job
 * is warned (IDLE_WARN, once); `warn_before` seconds after the warning it
 * is due for the action (IDLE_ACT, once). */
#ifndef GF_IDLE_H
#define GF_IDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDLE_MAX_GPUS 64

struct idle_rule {
	int64_t after_secs;		/* idle this long: warned (> 0) */
	int64_t warn_before_secs;	/* then this long: the action (> 0) */
	int threshold_util;		/* percent: below it a GPU is idle (1..100) */
};

struct idle_clock {
	double since;			/* the idle span began (first idle sample); 0: not idle */
	double warned_at;		/* 0: not warned */
	bool acted;			/* IDLE_ACT was returned for this span */
	bool have_mem;			/* mem[] holds the previous sample's */
	size_t nmem;
	uint64_t mem[IDLE_MAX_GPUS];
};

/* One sample of the job's GPUs: util[i] in percent (-1: unknown), mem_mb[i]
 * what the job's processes use on it. */
struct idle_sample {
	double now;			/* > 0 */
	size_t ngpu;			/* <= IDLE_MAX_GPUS (more: activity) */
	const int *util;
	const uint64_t *mem_mb;
};

enum idle_event {
	IDLE_NOTHING,
	IDLE_CLEARED,			/* activity after a warning: withdrawn */
	IDLE_WARN,			/* idle for `after`: warn now */
	IDLE_ACT,			/* warned `warn_before` ago: act now */
};

/* Advance c by one sample under rule r. A zeroed clock is a new one. */
enum idle_event idle_step(struct idle_clock *c, const struct idle_rule *r, const struct idle_sample *s);

/* Seconds the job has been idle at now (0 when not idle). */
double idle_for(const struct idle_clock *c, double now);

/* "1:45:00" (h:mm:ss, hours unbounded) and "1:45" (h:mm) of secs. */
void idle_fmt_hms(double secs, char *buf, size_t size);
void idle_fmt_hm(double secs, char *buf, size_t size);

#endif
