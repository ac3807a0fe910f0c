/* sched_bench.c — times one scheduler pass (sched_pass() of
 * src/daemon/core/sched.c, linked in) over a synthetic queue, in-process.
 *
 *   sched_bench NJOBS PASSES SCENARIO [estimate [DEFAULT_RUNTIME_SECS]]
 *
 * SCENARIO "busy": 8 GPUs all held by running jobs with time limits, so
 * every queued job waits and the first one gets a backfill reservation
 * that every later job is checked against (the common state of a full
 * machine). "free": 8 idle GPUs, so the pass also picks GPUs and starts
 * the jobs that fit. The queue mixes priorities, GPU counts (1-4), time
 * limits and host memory. Prints one line:
 *   njobs=N scenario=S passes=P started=K median_us=.. min_us=.. max_us=..
 * With "estimate", times sched_estimate() (estimate.c, linked in) over the
 * same input instead: the expected start of every job; started=K is then
 * how many got one; DEFAULT_RUNTIME_SECS: how long a job without a time
 * limit is assumed to run (default_runtime_estimate; 0, the default:
 * unknown).
 * Build: cc -std=c11 -D_GNU_SOURCE -O2 -iquote src/daemon/core
 *        bench/sched_bench.c src/daemon/core/sched.c src/daemon/core/estimate.c -lm */
#include "estimate.h"
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NGPUS 8

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A deterministic queue: the same input on every run of the benchmark. */
static struct sched_job *make_jobs(size_t n)
{
	struct sched_job *jobs = calloc(n, sizeof *jobs);
	uint64_t x = 0x9E3779B97F4A7C15ULL;

	if (!jobs)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		jobs[i] = (struct sched_job){
			.id = (int64_t)i + 100,
			.priority = (x % 10 == 0) ? 20 : 10,
			.gpus = 1 + (int)((x >> 8) % 4),	/* 1..4 */
			.time_limit_secs = (x >> 16) % 3 ? (int64_t)((x >> 20) % 720 + 1) * 60 : 0,
			.memory_mb = (x >> 32) % 4 ? 0 : (int64_t)((x >> 40) % 64 + 1) * 1024,
		};
	}
	return jobs;
}

static int usage(void)
{
	fprintf(stderr, "usage: sched_bench NJOBS PASSES busy|free [estimate [DEFAULT_RUNTIME_SECS]]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sched_gpu gpus[NGPUS];
	struct sched_running running[NGPUS];
	struct sched_input in;
	struct sched_decision *out;
	struct sched_job *jobs;
	double *t;
	size_t n, passes, started = 0, nrunning = 0;
	struct sched_estimate *est;
	bool busy, estimate;

	if (argc != 4 && !((argc == 5 || argc == 6) && !strcmp(argv[4], "estimate")))
		return usage();
	n = strtoul(argv[1], NULL, 10);
	passes = strtoul(argv[2], NULL, 10);
	if (!n || !passes || (strcmp(argv[3], "busy") && strcmp(argv[3], "free")))
		return usage();
	busy = !strcmp(argv[3], "busy");
	estimate = argc >= 5;
	for (int i = 0; i < NGPUS; i++) {
		gpus[i] = (struct sched_gpu){ .index = i, .usable = true, .exclusive = busy,
					      .total_mb = 81920 };
		if (busy)
			running[nrunning++] = (struct sched_running){
				.gpu_mask = 1ULL << i,
				.memory_mb = 8192,
				.end_by = 1e9 + 600.0 * (i + 1),
			};
	}
	jobs = make_jobs(n);
	out = calloc(n, sizeof *out);
	t = calloc(passes, sizeof *t);
	est = calloc(n, sizeof *est);
	if (!jobs || !out || !t || !est) {
		fprintf(stderr, "sched_bench: out of memory\n");
		return 1;
	}
	in = (struct sched_input){
		.jobs = jobs, .njobs = n, .running = running, .nrunning = nrunning,
		.gpus = gpus, .ngpus = NGPUS, .mem_total_mb = 512 * 1024, .now = 1e9,
		.strategy = SCHED_SEQUENTIAL,
	};
	struct sched_est_input ein = { .in = &in, .default_runtime = argc == 6 ? atof(argv[5]) : 0 };

	sched_pass(&in, out);	/* warm the caches and the allocator */
	for (size_t p = 0; p < passes; p++) {
		double t0 = now_us();

		started = estimate ? sched_estimate(&ein, est) : sched_pass(&in, out);
		t[p] = now_us() - t0;
	}
	qsort(t, passes, sizeof *t, cmp_double);
	printf("njobs=%zu scenario=%s%s passes=%zu started=%zu median_us=%.1f min_us=%.1f max_us=%.1f\n",
	       n, argv[3], estimate ? "-estimate" : "", passes, started, t[passes / 2], t[0], t[passes - 1]);
	free(t);
	free(est);
	free(out);
	free(jobs);
	return 0;
}
