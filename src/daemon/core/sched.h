/* sched.h — the scheduler pass: a pure function from the queue and the
 * machine's state to decisions. No I/O, no globals, no clock of its own.
 *
 * Order: priority (higher first), then submission order (lower id first).
 * `priority` is how a job counts across users; `own_priority` orders one
 * user's own jobs among themselves (like Slurm's nice, but it never moves
 * another user's job): the order by priority, usage and id says which
 * places in the queue are a user's (per user and priority), and the user's
 * jobs of that priority take those places by own_priority (higher first),
 * then id.
 * Backfill (EASY): once the first job that cannot start is found, it gets a
 * reservation at the earliest time T its GPUs and memory will be free (from
 * the running jobs' time limits); a later job may start ahead of it only
 * when it ends before T by its own time limit, or uses only what the
 * reservation leaves over. Jobs held back by that rule wait with `Priority`.
 *
 * Fair use (all of it comes in as input):
 * - Fair share: within one priority, the job whose user has less decayed
 *   usage goes first (callers pass usage 0 for all when it is off); a
 *   user's own_priority cannot change that.
 * - Quotas: a job starts only when its user's and its project's subjects
 *   both stay within max_running_jobs / max_running_gpus once it runs, and
 *   (for GPU jobs) the subject has not used up max_gpu_hours_per_day;
 *   otherwise it waits with `Quota` (the decision names the subject and the
 *   limit). Jobs started in the pass count at once.
 * - Reservations: a GPU reserved for another user is not given to a job
 *   that would still run when the reservation begins, judged by the job's
 *   time limit, or for a job without one by `no_limit_horizon` seconds;
 *   a job kept off only by that waits with `Reservation`. A job prefers
 *   GPUs reserved for its own user now.
 * CPUs (cpus_total > 0) are counted like host memory: a job starts only
 * when its cpus fit beside those of the running jobs and of the jobs
 * started in the pass; one kept off by CPUs waits with `Resources` and
 * limit LIM_CPUS (cpus_busy says how many were booked). */
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
	int priority;			/* across users (the daemon: jobs_cross_priority) */
	int own_priority;		/* among the jobs of its uid and priority */
	int gpus;
	bool shared;
	int64_t gpu_memory_mb;
	int64_t memory_mb;
	int64_t time_limit_secs;	/* 0 = none */
	int64_t group_id;		/* 0 = none */
	int cpus;			/* CPUs it books (counted when cpus_total > 0) */
	int group_cap;			/* 0 = none */
	const char *blocked;		/* not eligible now: this reason is kept */
	uint32_t uid;			/* owner, for reservations */
	int user_quota, project_quota;	/* 1 + index into sched_input.quotas; 0 none */
	double usage;			/* the owner's decayed usage (fair share) */
};

/* A quota subject (a user or a project): its limits and what it holds. */
struct sched_quota {
	int64_t max_jobs, max_gpus;	/* -1 = unlimited */
	int64_t running_jobs, running_gpus;
	bool day_used_up;		/* max_gpu_hours_per_day reached */
};

/* GPUs kept for one user in [start, end). */
struct sched_resv {
	int64_t id;
	uint32_t uid;
	uint64_t gpu_mask;		/* physical indices */
	double start, end;
};

struct sched_running {
	uint64_t gpu_mask;
	int64_t memory_mb;
	int cpus;
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
	int cpus_total;			/* [daemon] cpus; 0: CPUs are not counted */
	double now;
	enum sched_strategy strategy;
	uint64_t seed;			/* for SCHED_RANDOM */
	const int *topo;		/* ngpus*ngpus NVML common-ancestor levels, or NULL */
	const struct sched_quota *quotas;
	size_t nquotas;
	const struct sched_resv *resvs;
	size_t nresvs;
	double no_limit_horizon;	/* seconds a job without a time limit is assumed to run */
};

/* What held a job back, for `gjob show`. */
enum sched_limit {
	LIM_NONE, LIM_JOBS, LIM_GPUS, LIM_GPU_HOURS, LIM_GROUP /* its batch's cap (Resources) */,
	LIM_CPUS	/* Resources: its CPUs are not free (cpus_busy of cpus_total) */
};

struct sched_decision {
	int64_t id;
	uint64_t gpu_mask;		/* GPUs to start on, when reason is NULL */
	const char *reason;		/* NULL: start now; else why it waits */
	int quota;			/* Quota: the subject that holds it (as user_quota) */
	enum sched_limit limit;		/* and which of its limits */
	int64_t resv_id;		/* Reservation: the one that keeps it off */
	double expected_start;		/* when it can start by the running jobs'
					 * time limits; 0 = not known */
	int cpus_busy;			/* LIM_CPUS: CPUs booked when it was looked at */
	/* The job that got the pass's backfill reservation (the first that
	 * could not start): reserves, and what the reservation leaves over at
	 * expected_start for later jobs (they start only when they end before
	 * it by their time limit or fit in this). For the estimate. */
	bool reserves;
	int resv_extra_gpus;
	int64_t resv_extra_mem, resv_extra_cpus;
};

/* Fills out[0..njobs) in scheduling order (one decision per job) and
 * returns how many jobs start. */
size_t sched_pass(const struct sched_input *in, struct sched_decision *out);

#endif
