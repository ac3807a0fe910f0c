/* sched.h — the scheduler pass: a pure function from the queue and the
 * machine's state to decisions. No I/O, no globals, no clock of its own.
 *
 * Order: priority (higher first), then submission order (lower id first).
 * Backfill (EASY): once the first job that cannot start is found, it gets a
 * reservation at the earliest time T its GPUs and memory will be free (from
 * the running jobs' time limits); a later job may start ahead of it only
 * when it ends before T by its own time limit, or uses only what the
 * reservation leaves over. Jobs held back by that rule wait with `Priority`. */
#ifndef GF_SCHED_H
#define GF_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sched_strategy { SCHED_SEQUENTIAL, SCHED_RANDOM };

struct sched_gpu {
	int index;		/* physical NVML index */
	bool usable;		/* allowed, not down, no unmanaged process */
	bool exclusive;		/* held by an exclusive job */
	int nshared;		/* shared jobs on it */
	uint64_t total_mb;
	uint64_t booked_mb;	/* --gpu-memory booked by shared jobs */
	uint64_t foreign_mb;	/* used by processes outside gflow (ignored ones) */
};

struct sched_job {
	int64_t id;
	int priority;
	int gpus;
	bool shared;
	int64_t gpu_memory_mb;
	int64_t memory_mb;
	int64_t time_limit_secs;	/* 0 = none */
	int64_t group_id;		/* 0 = none */
	int group_cap;			/* 0 = none */
	const char *blocked;		/* not eligible now: this reason is kept */
};

struct sched_running {
	uint64_t gpu_mask;
	int64_t memory_mb;
	double end_by;			/* start + time limit; 0 = unknown */
	int64_t group_id;
};

struct sched_input {
	const struct sched_job *jobs;
	size_t njobs;
	const struct sched_running *running;
	size_t nrunning;
	const struct sched_gpu *gpus;
	size_t ngpus;
	int64_t mem_total_mb;		/* 0 = unknown: memory is not admitted */
	double now;
	enum sched_strategy strategy;
	uint64_t seed;			/* for SCHED_RANDOM */
	const int *topo;		/* ngpus*ngpus NVML common-ancestor levels, or NULL */
};

struct sched_decision {
	int64_t id;
	uint64_t gpu_mask;		/* GPUs to start on, when reason is NULL */
	const char *reason;		/* NULL: start now; else why it waits */
};

/* Fills out[0..njobs) in scheduling order (one decision per job) and
 * returns how many jobs start. */
size_t sched_pass(const struct sched_input *in, struct sched_decision *out);

#endif
