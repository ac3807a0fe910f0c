/* test_sched.c — the pure scheduler pass: order, GPUs, memory, shared
 * packing, strategies, topology, group caps and backfill. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

#define GB 1024

static struct sched_gpu gpus4[4];

static void idle_gpus(struct sched_gpu *g, size_t n, uint64_t total_mb)
{
	for (size_t i = 0; i < n; i++)
		g[i] = (struct sched_gpu){ .index = (int)i, .usable = true, .total_mb = total_mb };
}

static struct sched_input input(const struct sched_job *jobs, size_t n, struct sched_gpu *g, size_t ng)
{
	return (struct sched_input){ .jobs = jobs, .njobs = n, .gpus = g, .ngpus = ng, .now = 1000.0 };
}

static const struct sched_decision *find(const struct sched_decision *d, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (d[i].id == id)
			return &d[i];
	fail_msg("no decision for job %lld", (long long)id);
	return NULL;
}

static void test_priority_then_submission_order(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1 },
		{ .id = 2, .priority = 20, .gpus = 1 },
		{ .id = 3, .priority = 10, .gpus = 1 },
	};
	struct sched_decision d[3];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 2, 80 * GB);
	in = input(jobs, 3, gpus4, 2);
	assert_int_equal(sched_pass(&in, d), 2);
	/* decisions come in scheduling order */
	assert_int_equal(d[0].id, 2);
	assert_int_equal(d[1].id, 1);
	assert_int_equal(d[2].id, 3);
	assert_null(d[0].reason);
	assert_int_equal(d[0].gpu_mask, 1);	/* sequential: lowest first */
	assert_int_equal(d[1].gpu_mask, 2);
	assert_string_equal(d[2].reason, "Resources");
}

static void test_four_distinct_gpus_and_fifth_waits(void **state)
{
	struct sched_job jobs[5];
	struct sched_decision d[5];
	struct sched_input in;
	uint64_t seen = 0;

	(void)state;
	for (int i = 0; i < 5; i++)
		jobs[i] = (struct sched_job){ .id = i + 1, .priority = 10, .gpus = 1 };
	idle_gpus(gpus4, 4, 80 * GB);
	in = input(jobs, 5, gpus4, 4);
	assert_int_equal(sched_pass(&in, d), 4);
	for (int i = 0; i < 4; i++) {
		assert_null(d[i].reason);
		assert_int_equal(__builtin_popcountll(d[i].gpu_mask), 1);
		assert_false(seen & d[i].gpu_mask);
		seen |= d[i].gpu_mask;
	}
	assert_int_equal(seen, 0xf);
	assert_string_equal(find(d, 5, 5)->reason, "Resources");
}

static void test_unusable_and_busy_gpus_are_skipped(void **state)
{
	struct sched_job jobs[] = { { .id = 1, .gpus = 2 } };
	struct sched_decision d[1];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 4, 80 * GB);
	gpus4[0].exclusive = true;	/* held by a running job */
	gpus4[1].usable = false;	/* unmanaged, restricted or down */
	in = input(jobs, 1, gpus4, 4);
	assert_int_equal(sched_pass(&in, d), 1);
	assert_int_equal(d[0].gpu_mask, 0xc);
	gpus4[2].nshared = 1;		/* exclusive never joins a shared GPU */
	assert_int_equal(sched_pass(&in, d), 0);
	assert_string_equal(d[0].reason, "Resources");
}

static void test_physical_indices_are_reported(void **state)
{
	struct sched_gpu g[2] = {
		{ .index = 2, .usable = true, .total_mb = 1 },
		{ .index = 5, .usable = true, .total_mb = 1 },
	};
	struct sched_job jobs[] = { { .id = 1, .gpus = 2 } };
	struct sched_decision d[1];
	struct sched_input in = input(jobs, 1, g, 2);

	(void)state;
	assert_int_equal(sched_pass(&in, d), 1);
	assert_int_equal(d[0].gpu_mask, (1u << 2) | (1u << 5));
}

static void test_zero_gpu_jobs_need_no_gpus(void **state)
{
	struct sched_job jobs[] = { { .id = 1 }, { .id = 2 } };
	struct sched_decision d[2];
	struct sched_input in = input(jobs, 2, NULL, 0);

	(void)state;
	assert_int_equal(sched_pass(&in, d), 2);
	assert_int_equal(d[0].gpu_mask, 0);
	assert_null(d[1].reason);
}

static void test_blocked_reason_is_kept(void **state)
{
	struct sched_job jobs[] = { { .id = 1, .blocked = "Dependency" }, { .id = 2, .blocked = "BeginTime" } };
	struct sched_decision d[2];
	struct sched_input in = input(jobs, 2, NULL, 0);

	(void)state;
	assert_int_equal(sched_pass(&in, d), 0);
	assert_string_equal(d[0].reason, "Dependency");
	assert_string_equal(d[1].reason, "BeginTime");
}

static void test_host_memory_admission(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .memory_mb = 6000 },
		{ .id = 2, .memory_mb = 6000 },
		{ .id = 3, .memory_mb = 2000 },
	};
	struct sched_running run[] = { { .memory_mb = 1000 } };
	struct sched_decision d[3];
	struct sched_input in = input(jobs, 3, NULL, 0);

	(void)state;
	in.mem_total_mb = 10000;
	in.running = run;
	in.nrunning = 1;
	/* 1000 + 6000 fits; the second 6000 does not; 2000 would fit but the
	 * blocked job 2 reserves the memory (no time limits: no backfill). */
	assert_int_equal(sched_pass(&in, d), 1);
	assert_null(find(d, 3, 1)->reason);
	assert_string_equal(find(d, 3, 2)->reason, "Resources");
	assert_string_equal(find(d, 3, 3)->reason, "Priority");
}

/* A 4-CPU machine: 2 + 2 run, the third waits naming CPUs; a 5-CPU job
 * never starts, not even on an empty machine. */
static void test_cpus_counted(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .cpus = 2 },
		{ .id = 2, .cpus = 2 },
		{ .id = 3, .cpus = 1 },
	};
	struct sched_job big[] = { { .id = 9, .cpus = 5 } };
	struct sched_running run[] = { { .cpus = 3 } };
	struct sched_decision d[3];
	struct sched_input in;

	(void)state;
	in = input(jobs, 3, NULL, 0);
	in.cpus_total = 4;
	assert_int_equal(sched_pass(&in, d), 2);
	assert_null(find(d, 3, 1)->reason);
	assert_null(find(d, 3, 2)->reason);
	assert_string_equal(find(d, 3, 3)->reason, "Resources");
	assert_int_equal(find(d, 3, 3)->limit, LIM_CPUS);
	assert_int_equal(find(d, 3, 3)->cpus_busy, 4);
	/* running jobs count: 3 of 4 busy leaves room for job 3 only */
	in.running = run;
	in.nrunning = 1;
	assert_int_equal(sched_pass(&in, d), 0);
	assert_string_equal(find(d, 3, 1)->reason, "Resources");
	assert_int_equal(find(d, 3, 1)->limit, LIM_CPUS);
	assert_int_equal(find(d, 3, 1)->cpus_busy, 3);
	/* job 1 blocks and reserves; 2 and 3 cannot backfill into CPUs it waits for */
	assert_string_equal(find(d, 3, 3)->reason, "Priority");
	in = input(big, 1, NULL, 0);
	in.cpus_total = 4;
	assert_int_equal(sched_pass(&in, d), 0);
	assert_string_equal(d[0].reason, "Resources");
	assert_int_equal(d[0].limit, LIM_CPUS);
	assert_int_equal(d[0].cpus_busy, 0);
	assert_true(d[0].expected_start == 0);	/* never, by what runs */
	/* cpus_total 0: not counted */
	in.cpus_total = 0;
	assert_int_equal(sched_pass(&in, d), 1);
}

/* Backfill counts CPUs: with the first blocked job's CPUs promised at the
 * running job's end, a later job runs now only if it ends before then or
 * fits in what is left over. */
static void test_cpus_backfill(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .cpus = 4 },
		{ .id = 2, .cpus = 1, .time_limit_secs = 100 },	/* ends before: runs */
		{ .id = 3, .cpus = 1 },				/* no limit: would delay 1 */
	};
	struct sched_running run[] = { { .cpus = 2, .end_by = 1500 } };
	struct sched_decision d[3];
	struct sched_input in;

	(void)state;
	in = input(jobs, 3, NULL, 0);
	in.cpus_total = 4;
	in.running = run;
	in.nrunning = 1;
	assert_int_equal(sched_pass(&in, d), 1);
	assert_string_equal(find(d, 3, 1)->reason, "Resources");
	assert_true(find(d, 3, 1)->expected_start == 1500);
	assert_null(find(d, 3, 2)->reason);
	assert_string_equal(find(d, 3, 3)->reason, "Priority");
}

/* Behind a blocked job that cannot start at any known time (it asks more
 * GPUs than there are), a 0-GPU job still starts: CPUs not counted
 * (cpus_total 0) never hold it back, and counted ones only as far as the
 * blocked job's own need. */
static void test_cpus_not_counted_never_block(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .gpus = 8, .cpus = 1 },	/* more GPUs than there are */
		{ .id = 2, .cpus = 1 },
	};
	struct sched_decision d[2];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 4, 80 * GB);
	in = input(jobs, 2, gpus4, 4);
	assert_int_equal(sched_pass(&in, d), 1);
	assert_string_equal(find(d, 2, 1)->reason, "Resources");
	assert_null(find(d, 2, 2)->reason);
	/* counted: the blocked job keeps the CPU it needs, the rest is free */
	in.cpus_total = 2;
	assert_int_equal(sched_pass(&in, d), 1);
	assert_null(find(d, 2, 2)->reason);
	in.cpus_total = 1;
	assert_int_equal(sched_pass(&in, d), 0);
	assert_string_equal(find(d, 2, 2)->reason, "Priority");
}

static void test_shared_packing(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .gpus = 1, .shared = true, .gpu_memory_mb = 30 * GB },
		{ .id = 2, .gpus = 1, .shared = true, .gpu_memory_mb = 30 * GB },
		{ .id = 3, .gpus = 1, .shared = true, .gpu_memory_mb = 30 * GB },
		{ .id = 4, .gpus = 1 },
	};
	struct sched_decision d[4];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 3, 80 * GB);
	in = input(jobs, 4, gpus4, 3);
	assert_int_equal(sched_pass(&in, d), 4);
	assert_int_equal(find(d, 4, 1)->gpu_mask, 1);
	assert_int_equal(find(d, 4, 2)->gpu_mask, 1);	/* 60G of 80G */
	assert_int_equal(find(d, 4, 3)->gpu_mask, 2);	/* 90G would not fit */
	assert_int_equal(find(d, 4, 4)->gpu_mask, 4);	/* exclusive: only the empty GPU */
}

static void test_shared_counts_foreign_memory_and_prefers_packed(void **state)
{
	struct sched_job jobs[] = { { .id = 1, .gpus = 1, .shared = true, .gpu_memory_mb = 20 * GB } };
	struct sched_decision d[1];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 3, 80 * GB);
	gpus4[0].foreign_mb = 70 * GB;	/* an ignored process uses most of GPU 0 */
	gpus4[2].nshared = 1;
	gpus4[2].booked_mb = 10 * GB;
	in = input(jobs, 1, gpus4, 3);
	assert_int_equal(sched_pass(&in, d), 1);
	assert_int_equal(d[0].gpu_mask, 4);	/* packs onto the shared GPU 2 */
	gpus4[2].booked_mb = 70 * GB;
	assert_int_equal(sched_pass(&in, d), 1);
	assert_int_equal(d[0].gpu_mask, 2);	/* GPU 0 lacks room, GPU 2 is full */
}

static void test_random_strategy_varies_sequential_does_not(void **state)
{
	struct sched_job jobs[] = { { .id = 1, .gpus = 1 } };
	struct sched_decision d[1];
	struct sched_input in;
	uint64_t seen = 0;

	(void)state;
	idle_gpus(gpus4, 4, 80 * GB);
	in = input(jobs, 1, gpus4, 4);
	in.strategy = SCHED_RANDOM;
	for (uint64_t seed = 1; seed <= 50; seed++) {
		in.seed = seed * 7919;
		sched_pass(&in, d);
		seen |= d[0].gpu_mask;
	}
	assert_true(__builtin_popcountll(seen) > 1);
	in.strategy = SCHED_SEQUENTIAL;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		in.seed = seed;
		sched_pass(&in, d);
		assert_int_equal(d[0].gpu_mask, 1);
	}
}

static void test_topology_prefers_close_gpus(void **state)
{
	/* GPUs 0,1 are far apart (50); 1,2 share a switch (10). */
	int topo[9] = { 0, 50, 50, 50, 0, 10, 50, 10, 0 };
	struct sched_job jobs[] = { { .id = 1, .gpus = 2 } };
	struct sched_decision d[1];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 3, 80 * GB);
	in = input(jobs, 1, gpus4, 3);
	in.topo = topo;
	assert_int_equal(sched_pass(&in, d), 1);
	assert_int_equal(d[0].gpu_mask, 6);
	in.topo = NULL;
	sched_pass(&in, d);
	assert_int_equal(d[0].gpu_mask, 3);
}

static void test_group_cap(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .group_id = 1, .group_cap = 1 },
		{ .id = 2, .group_id = 1, .group_cap = 1 },
		{ .id = 3, .group_id = 9, .group_cap = 2 },
	};
	struct sched_running run[] = { { .group_id = 9 } };
	struct sched_decision d[3];
	struct sched_input in = input(jobs, 3, NULL, 0);

	(void)state;
	assert_int_equal(sched_pass(&in, d), 2);
	assert_null(find(d, 3, 1)->reason);
	assert_string_equal(find(d, 3, 2)->reason, "Resources");
	in.running = run;
	in.nrunning = 1;
	assert_int_equal(sched_pass(&in, d), 2);	/* group 9 has one of two running */
	struct sched_running two[] = { { .group_id = 9 }, { .group_id = 9 } };
	in.running = two;
	in.nrunning = 2;
	sched_pass(&in, d);
	assert_string_equal(find(d, 3, 3)->reason, "Resources");
}

/* Two GPUs; GPU 0 is busy until now+100. A high-priority 2-GPU job waits;
 * 1-GPU jobs behind it may use GPU 1 only when they end before now+100. */
static void test_backfill(void **state)
{
	struct sched_gpu g[2];
	struct sched_running run[] = { { .gpu_mask = 1, .end_by = 1100 } };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 50, .gpus = 2 },
		{ .id = 2, .priority = 10, .gpus = 1, .time_limit_secs = 200 },	/* ends after T */
		{ .id = 3, .priority = 10, .gpus = 1 },				/* no limit */
		{ .id = 4, .priority = 10, .gpus = 1, .time_limit_secs = 60 },	/* ends before T */
		{ .id = 5, .priority = 10 },					/* uses no GPU */
	};
	struct sched_decision d[5];
	struct sched_input in;

	(void)state;
	idle_gpus(g, 2, 80 * GB);
	g[0].exclusive = true;
	in = input(jobs, 5, g, 2);
	in.running = run;
	in.nrunning = 1;
	assert_int_equal(sched_pass(&in, d), 2);
	assert_string_equal(find(d, 5, 1)->reason, "Resources");
	assert_string_equal(find(d, 5, 2)->reason, "Priority");
	assert_string_equal(find(d, 5, 3)->reason, "Priority");
	assert_null(find(d, 5, 4)->reason);
	assert_int_equal(find(d, 5, 4)->gpu_mask, 2);
	assert_null(find(d, 5, 5)->reason);
}

/* When the blocking job never ends by what we know, only jobs with a limit
 * (or none of what the blocked job needs) may pass it. */
static void test_backfill_unknown_end(void **state)
{
	struct sched_gpu g[2];
	struct sched_running run[] = { { .gpu_mask = 1, .end_by = 0 } };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 50, .gpus = 2 },
		{ .id = 2, .priority = 10, .gpus = 1 },
		{ .id = 3, .priority = 10, .gpus = 1, .time_limit_secs = 10 },
	};
	struct sched_decision d[3];
	struct sched_input in;

	(void)state;
	idle_gpus(g, 2, 80 * GB);
	g[0].exclusive = true;
	in = input(jobs, 3, g, 2);
	in.running = run;
	in.nrunning = 1;
	assert_int_equal(sched_pass(&in, d), 1);
	assert_string_equal(find(d, 3, 2)->reason, "Priority");
	assert_null(find(d, 3, 3)->reason);
}

static void test_no_backfill_needed_when_nothing_blocks(void **state)
{
	struct sched_job jobs[] = { { .id = 1, .priority = 1, .gpus = 1 }, { .id = 2, .priority = 1, .gpus = 1 } };
	struct sched_decision d[2];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 4, 80 * GB);
	in = input(jobs, 2, gpus4, 4);
	assert_int_equal(sched_pass(&in, d), 2);
}

/* More distinct groups than the group table starts with (a hang once). */
static void test_many_groups(void **state)
{
	struct sched_job jobs[300];
	struct sched_running run[40];
	struct sched_decision d[300];
	struct sched_input in;

	(void)state;
	for (int i = 0; i < 300; i++)
		jobs[i] = (struct sched_job){ .id = i + 1, .group_id = 1000 + i / 2, .group_cap = 1 };
	for (int i = 0; i < 40; i++)
		run[i] = (struct sched_running){ .group_id = 5000 + i };
	in = input(jobs, 300, NULL, 0);
	in.running = run;
	in.nrunning = 40;
	assert_int_equal(sched_pass(&in, d), 150);	/* one of each pair */
	assert_null(find(d, 300, 1)->reason);
	assert_string_equal(find(d, 300, 2)->reason, "Resources");
}

static void test_large_queue(void **state)
{
	size_t n = 20000;
	struct sched_job *jobs = calloc(n, sizeof *jobs);
	struct sched_decision *d = calloc(n, sizeof *d);
	struct sched_gpu g[8];
	struct sched_input in;

	(void)state;
	for (size_t i = 0; i < n; i++)
		jobs[i] = (struct sched_job){ .id = (int64_t)i + 1, .priority = (int)(i % 7), .gpus = 1 };
	idle_gpus(g, 8, 80 * GB);
	in = input(jobs, n, g, 8);
	assert_int_equal(sched_pass(&in, d), 8);
	/* the 8 starters are the highest priority, lowest ids */
	for (int i = 0; i < 8; i++) {
		assert_null(d[i].reason);
		assert_int_equal(jobs[d[i].id - 1].priority, 6);
	}
	free(jobs);
	free(d);
}

/* The order every pass must give: priority (higher first), usage (lower
 * first), id (lower first). */
static int ref_cmp(const void *a, const void *b)
{
	const struct sched_job *x = a, *y = b;

	if (x->priority != y->priority)
		return y->priority > x->priority ? 1 : -1;
	if (x->usage != y->usage)
		return (x->usage > y->usage) - (x->usage < y->usage);
	return (x->id > y->id) - (x->id < y->id);
}

/* The sort agrees with a plain comparison sort, with ids in and out
 * of order, negative and huge priorities and ids, and usages of every
 * sign (including -0.0 beside 0.0). */
static void check_order(struct sched_job *jobs, size_t n)
{
	struct sched_job *ref = malloc(n * sizeof *ref);
	struct sched_decision *d = calloc(n, sizeof *d);
	struct sched_input in = input(jobs, n, gpus4, 0);

	assert_non_null(ref);
	assert_non_null(d);
	memcpy(ref, jobs, n * sizeof *ref);
	qsort(ref, n, sizeof *ref, ref_cmp);
	assert_int_equal(sched_pass(&in, d), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(d[i].id, ref[i].id);
	free(ref);
	free(d);
}

static void test_order_matches_comparison_sort(void **state)
{
	static const double usages[] = { 0.0, -0.0, 1.5, -2.25, 1e12, 3.0 };
	static const int prios[] = { 0, 10, -5, 20, 2147483647, -2147483647 - 1 };
	size_t n = 3000;
	struct sched_job *jobs = calloc(n, sizeof *jobs);
	uint64_t x = 88172645463325252ULL;

	(void)state;
	assert_non_null(jobs);
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			jobs[i] = (struct sched_job){
				/* rounds 0 and 2: ids ascending; 1 and 3: shuffled, some near 2^62 */
				.id = round % 2 ? (int64_t)(x % 1000000) * 7919 + (int64_t)i * 1000003 +
							  (x % 5 ? 0 : (1LL << 62))
						: (int64_t)i * 3 + 1,
				.priority = round < 2 ? prios[x % 6] : 10,
				.usage = round == 3 ? usages[(x >> 8) % 6] : 0,
				.gpus = 1,
			};
			if (round % 2 == 0)
				jobs[i].usage = (x >> 4) % 3 ? 0 : usages[(x >> 12) % 6];
		}
		check_order(jobs, n);
	}
	/* One usage for all and ids ascending (the counting path): priorities
	 * across the whole window around the first job's, at both its edges,
	 * one step past either edge (the radix sort then), or all alike. */
	for (int round = 0; round < 5; round++) {
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			jobs[i] = (struct sched_job){
				.id = (int64_t)i * 2 + 5,
				.priority = round == 4 ? -7 : 100 + (int)(x % 1024) - 512,
				.usage = x % 2 ? 0.0 : -0.0,
				.gpus = 1,
			};
		}
		jobs[0].priority = 100;
		jobs[n / 2].priority = 100 - 512;
		jobs[n / 3].priority = 100 + 511;
		if (round == 1)
			jobs[n - 1].priority = 100 + 512;
		if (round == 2)
			jobs[n / 4].priority = 100 - 513;
		if (round == 3)
			jobs[0].priority = 2147483647;
		if (round == 4)
			jobs[0].priority = jobs[n / 2].priority = jobs[n / 3].priority = -7;
		check_order(jobs, n);
	}
	free(jobs);
}

/* A job wanting more GPUs than are free waits with Resources (and the first
 * such job gets the backfill estimate) without the GPUs being looked at;
 * a smaller job behind it still starts on what is free, and a shared job
 * still goes on a GPU that holds shared jobs. */
static void test_more_gpus_than_free(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 3 },
		{ .id = 2, .priority = 10, .gpus = 1, .time_limit_secs = 60 },
		{ .id = 3, .priority = 10, .gpus = 2 },
		{ .id = 4, .priority = 10, .gpus = 1, .shared = true, .gpu_memory_mb = 10 * GB, .time_limit_secs = 60 },
	};
	struct sched_running run[] = { { .gpu_mask = 1, .end_by = 1500.0 }, { .gpu_mask = 2, .end_by = 1600.0 } };
	struct sched_decision d[4];
	struct sched_input in;

	(void)state;
	idle_gpus(gpus4, 4, 80 * GB);
	gpus4[0].exclusive = true;
	gpus4[1].exclusive = true;
	gpus4[3].nshared = 1;
	gpus4[3].booked_mb = 10 * GB;
	in = input(jobs, 4, gpus4, 4);
	in.running = run;
	in.nrunning = 2;
	assert_int_equal(sched_pass(&in, d), 2);
	assert_string_equal(find(d, 4, 1)->reason, "Resources");
	assert_true(find(d, 4, 1)->expected_start == 1600.0);
	assert_null(find(d, 4, 2)->reason);	/* ends before the reservation */
	assert_int_equal(find(d, 4, 2)->gpu_mask, 4);
	assert_string_equal(find(d, 4, 3)->reason, "Resources");	/* none whole left */
	assert_null(find(d, 4, 4)->reason);
	assert_int_equal(find(d, 4, 4)->gpu_mask, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_priority_then_submission_order),
		cmocka_unit_test(test_four_distinct_gpus_and_fifth_waits),
		cmocka_unit_test(test_unusable_and_busy_gpus_are_skipped),
		cmocka_unit_test(test_physical_indices_are_reported),
		cmocka_unit_test(test_zero_gpu_jobs_need_no_gpus),
		cmocka_unit_test(test_blocked_reason_is_kept),
		cmocka_unit_test(test_host_memory_admission),
		cmocka_unit_test(test_cpus_counted),
		cmocka_unit_test(test_cpus_backfill),
		cmocka_unit_test(test_cpus_not_counted_never_block),
		cmocka_unit_test(test_shared_packing),
		cmocka_unit_test(test_shared_counts_foreign_memory_and_prefers_packed),
		cmocka_unit_test(test_random_strategy_varies_sequential_does_not),
		cmocka_unit_test(test_topology_prefers_close_gpus),
		cmocka_unit_test(test_group_cap),
		cmocka_unit_test(test_backfill),
		cmocka_unit_test(test_backfill_unknown_end),
		cmocka_unit_test(test_no_backfill_needed_when_nothing_blocks),
		cmocka_unit_test(test_many_groups),
		cmocka_unit_test(test_large_queue),
		cmocka_unit_test(test_order_matches_comparison_sort),
		cmocka_unit_test(test_more_gpus_than_free),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
