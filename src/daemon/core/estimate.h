/* estimate.h — when each waiting job is expected to start: the scheduler
 * pass (sched.h) driven forward in simulated time. Pure, like sched_pass().
 *
 * From the scheduler's input at `now`: run sched_pass(); the jobs it starts
 * start at t, and run until t + their time limit (a job without one until
 * t + default_runtime, or forever when that is 0); move t to the next event
 * (a running job's end, a reservation's edge, a begin time, a dependency
 * met) and run it again, until every job is placed, no event is left, or a
 * cap (steps, work, horizon) is reached. Quotas, fair share (usage as it is
 * now), group caps, reservations and backfill are sched_pass()'s own; the
 * first step is exactly sched_pass(in). */
#ifndef GF_ESTIMATE_H
#define GF_ESTIMATE_H

#include "sched.h"

/* What the pass's `blocked` stands for, per waiting job (same index as
 * in->jobs): when its begin time comes and which parents must end. */
struct sched_est_job {
	double begin_at;		/* 0 = none */
	const int64_t *deps;		/* parents not yet ended well (ids) */
	size_t ndeps;
	bool dep_any;			/* any one parent is enough */
};

/* Per running job (same index as in->running): what it gives back when it
 * ends. */
struct sched_est_running {
	int64_t id;
	double end;			/* when it is expected to end; 0 = unknown */
	int gpus;
	bool shared;
	int64_t gpu_memory_mb;
	int user_quota, project_quota;	/* as sched_job's */
};

struct sched_est_input {
	const struct sched_input *in;
	const struct sched_est_job *jobs;	 /* NULL: a blocked job stays blocked */
	const struct sched_est_running *running; /* NULL: end_by, nothing given back but memory */
	double default_runtime;		/* seconds for a job without a time limit; 0 = unknown */
	double horizon;			/* seconds after now; 0 = EST_HORIZON */
	size_t max_steps;		/* 0 = EST_MAX_STEPS */
	size_t max_work;		/* jobs looked at over all steps; 0 = EST_MAX_WORK */
	bool full_passes;		/* each step a sched_pass() of the whole queue (the
					 * reference the tests compare the prefix steps with) */
};

#define EST_HORIZON (366.0 * 86400)
#define EST_MAX_STEPS 20000
#define EST_MAX_WORK 1500000

enum est_unknown {
	EST_KNOWN,
	EST_NO_END,	/* it waits for jobs with no known end (no time limit, held) */
	EST_CAP,	/* beyond what the estimate looks at (horizon, steps) */
};

struct sched_estimate {
	int64_t id;
	double start;			/* 0 = unknown (see why) */
	double end;			/* start + time limit; 0 = unknown */
	uint64_t gpu_mask;		/* the GPUs it would get (physical) */
	enum est_unknown why;
};

/* Fills out[i] for in->jobs[i]; returns how many got a start. */
size_t sched_estimate(const struct sched_est_input *e, struct sched_estimate *out);

#endif
