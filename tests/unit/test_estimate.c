/* test_estimate.c — expected starts: sched_pass() driven forward in
 * simulated time (estimate.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"

#define NOW 1000.0

static void idle(struct sched_gpu *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g[i] = (struct sched_gpu){ .index = (int)i, .usable = true, .total_mb = 80000 };
}

static const struct sched_estimate *est_of(const struct sched_estimate *o, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (o[i].id == id)
			return &o[i];
	fail_msg("no estimate for job %lld", (long long)id);
	return NULL;
}

/* 1 GPU held by a job ending at NOW+600: the next starts then, on GPU 0. */
static void test_waits_for_running_limit(void **state)
{
	struct sched_gpu g[1];
	struct sched_running r = { .gpu_mask = 1, .end_by = NOW + 600 };
	struct sched_est_running rx = { .id = 1, .end = NOW + 600, .gpus = 1 };
	struct sched_job jobs[] = { { .id = 2, .priority = 10, .gpus = 1, .time_limit_secs = 60 },
				    { .id = 3, .priority = 10, .gpus = 1 } };
	struct sched_estimate o[2];
	struct sched_input in;
	struct sched_est_input e;

	(void)state;
	idle(g, 1);
	g[0].exclusive = true;
	in = (struct sched_input){ .jobs = jobs, .njobs = 2, .running = &r, .nrunning = 1, .gpus = g,
				   .ngpus = 1, .now = NOW };
	e = (struct sched_est_input){ .in = &in, .running = &rx };
	assert_int_equal(sched_estimate(&e, o), 2);
	assert_true(est_of(o, 2, 2)->start == NOW + 600);
	assert_int_equal(est_of(o, 2, 2)->gpu_mask, 1);
	assert_true(est_of(o, 2, 3)->start == NOW + 660);
	assert_true(est_of(o, 2, 3)->end == 0);	/* no limit: no end */
}

/* CPUs are given back as the simulation runs: on 2 CPUs, a 2-CPU job
 * waits for the 1-CPU job before it, started in the simulation, to end. */
static void test_cpus_of_simulated_starts(void **state)
{
	struct sched_gpu g[1];
	struct sched_running r = { .cpus = 1, .end_by = NOW + 60 };
	struct sched_est_running rx = { .id = 1, .end = NOW + 60 };
	struct sched_job jobs[] = { { .id = 2, .priority = 10, .cpus = 1, .time_limit_secs = 600 },
				    { .id = 3, .priority = 10, .cpus = 2, .time_limit_secs = 60 } };
	struct sched_estimate o[2];
	struct sched_input in;
	struct sched_est_input e;

	(void)state;
	idle(g, 1);
	in = (struct sched_input){ .jobs = jobs, .njobs = 2, .running = &r, .nrunning = 1, .gpus = g,
				   .ngpus = 1, .cpus_total = 2, .now = NOW };
	e = (struct sched_est_input){ .in = &in, .running = &rx };
	assert_int_equal(sched_estimate(&e, o), 2);
	assert_true(est_of(o, 2, 2)->start == NOW);
	/* both CPUs are free only once job 1 (at 60) and job 2, started
	 * in the simulation, (at 600) have ended */
	assert_true(est_of(o, 2, 3)->start == NOW + 600);
}

/* A running job without a limit: unknown, unless a default runtime. */
static void test_no_limit_unknown_unless_default(void **state)
{
	struct sched_gpu g[1];
	struct sched_running r = { .gpu_mask = 1 };
	struct sched_est_running rx = { .id = 1, .gpus = 1 };
	struct sched_job jobs[] = { { .id = 2, .priority = 10, .gpus = 1, .time_limit_secs = 60 },
				    { .id = 3, .priority = 10, .gpus = 1 } };
	struct sched_estimate o[2];
	struct sched_input in;
	struct sched_est_input e;

	(void)state;
	idle(g, 1);
	g[0].exclusive = true;
	in = (struct sched_input){ .jobs = jobs, .njobs = 2, .running = &r, .nrunning = 1, .gpus = g,
				   .ngpus = 1, .now = NOW };
	e = (struct sched_est_input){ .in = &in, .running = &rx };
	assert_int_equal(sched_estimate(&e, o), 0);
	assert_true(o[0].start == 0 && o[0].why == EST_NO_END);
	/* the engine gives the running job start + default as its end */
	rx.end = NOW + 100;
	e.default_runtime = 3600;
	assert_int_equal(sched_estimate(&e, o), 2);
	assert_true(est_of(o, 2, 2)->start == NOW + 100);
	assert_true(est_of(o, 2, 3)->start == NOW + 160);
	assert_true(est_of(o, 2, 3)->end == NOW + 160 + 3600);
}

/* A dependency: after its parent's estimated end; a begin time. */
static void test_dependency_and_begin(void **state)
{
	struct sched_gpu g[2];
	int64_t dep_on_2[] = { 2 }, dep_on_9[] = { 9 };
	struct sched_job jobs[] = {
		{ .id = 2, .priority = 10, .gpus = 1, .time_limit_secs = 300 },
		{ .id = 3, .priority = 10, .gpus = 1, .time_limit_secs = 60, .blocked = "Dependency" },
		{ .id = 4, .priority = 10, .gpus = 1, .blocked = "BeginTime" },
		{ .id = 5, .priority = 10, .gpus = 1, .blocked = "Dependency" },
	};
	struct sched_est_job x[] = { { 0 }, { .deps = dep_on_2, .ndeps = 1 }, { .begin_at = NOW + 50 },
				     { .deps = dep_on_9, .ndeps = 1 } };
	struct sched_estimate o[4];
	struct sched_input in;
	struct sched_est_input e;

	(void)state;
	idle(g, 2);
	in = (struct sched_input){ .jobs = jobs, .njobs = 4, .gpus = g, .ngpus = 2, .now = NOW };
	e = (struct sched_est_input){ .in = &in, .jobs = x };
	assert_int_equal(sched_estimate(&e, o), 3);
	assert_true(est_of(o, 4, 2)->start == NOW);
	assert_true(est_of(o, 4, 4)->start == NOW + 50);	/* GPU 1 is free */
	assert_int_equal(est_of(o, 4, 4)->gpu_mask, 2);
	assert_true(est_of(o, 4, 3)->start == NOW + 300);	/* its parent's end */
	assert_int_equal(est_of(o, 4, 3)->gpu_mask, 1);
	assert_true(est_of(o, 4, 5)->start == 0);		/* a held parent: unknown */
	assert_int_equal(est_of(o, 4, 5)->why, EST_NO_END);
}

/* A reservation of another user keeps the GPU until its end; a quota
 * lets the user's second job start only when the first ends. */
static void test_reservation_and_quota(void **state)
{
	struct sched_gpu g[2];
	struct sched_resv rv = { .id = 1, .uid = 99, .gpu_mask = 1, .start = NOW + 100, .end = NOW + 1000 };
	struct sched_quota q = { .max_jobs = 1, .max_gpus = -1 };
	struct sched_job jobs[] = {
		{ .id = 2, .priority = 10, .gpus = 2, .time_limit_secs = 500, .uid = 7 },
		{ .id = 3, .priority = 10, .gpus = 1, .time_limit_secs = 60, .uid = 8, .user_quota = 1 },
		{ .id = 4, .priority = 10, .gpus = 1, .time_limit_secs = 60, .uid = 8, .user_quota = 1 },
	};
	struct sched_estimate o[3];
	struct sched_input in;
	struct sched_est_input e;

	(void)state;
	idle(g, 2);
	in = (struct sched_input){ .jobs = jobs, .njobs = 3, .gpus = g, .ngpus = 2, .now = NOW, .resvs = &rv,
				   .nresvs = 1, .quotas = &q, .nquotas = 1 };
	e = (struct sched_est_input){ .in = &in };
	assert_int_equal(sched_estimate(&e, o), 3);
	/* job 2 needs both GPUs for 500 s: GPU 0 is reserved from +100 to +1000 */
	assert_true(est_of(o, 3, 2)->start == NOW + 1000);
	assert_true(est_of(o, 3, 3)->start == NOW);
	assert_int_equal(est_of(o, 3, 3)->gpu_mask, 1);	/* it ends before the reservation */
	assert_true(est_of(o, 3, 4)->start == NOW + 60);	/* quota: after job 3 */
	assert_int_equal(est_of(o, 3, 4)->gpu_mask, 2);	/* it would not: not GPU 0 */
}

/* Caps: a job beyond the step cap says so. */
static void test_cap(void **state)
{
	struct sched_gpu g[1];
	struct sched_job jobs[5];
	struct sched_estimate o[5];
	struct sched_input in;
	struct sched_est_input e;

	(void)state;
	idle(g, 1);
	for (int i = 0; i < 5; i++)
		jobs[i] = (struct sched_job){ .id = i + 1, .priority = 10, .gpus = 1, .time_limit_secs = 60 };
	in = (struct sched_input){ .jobs = jobs, .njobs = 5, .gpus = g, .ngpus = 1, .now = NOW };
	e = (struct sched_est_input){ .in = &in, .max_steps = 2 };
	assert_int_equal(sched_estimate(&e, o), 2);
	assert_true(o[1].start == NOW + 60);
	assert_int_equal(o[4].why, EST_CAP);
	e.max_steps = 0;
	e.horizon = 150;
	assert_int_equal(sched_estimate(&e, o), 3);
	assert_int_equal(o[3].why, EST_CAP);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The property: for random inputs, the jobs the estimate starts at now are
 * exactly those sched_pass() starts now, on the same GPUs. */
static void test_first_step_is_the_pass(void **state)
{
	uint64_t s = 0x1234567ULL;

	(void)state;
	for (int round = 0; round < 400; round++) {
		struct sched_gpu g[8];
		struct sched_running r[8];
		struct sched_est_running rx[8];
		struct sched_job jobs[40];
		struct sched_decision d[40];
		struct sched_estimate o[40];
		struct sched_quota q[3];
		struct sched_resv rv[2];
		size_t ng = 1 + rnd(&s) % 8, nr = 0, nj = rnd(&s) % 40, nstart, nnow = 0;
		struct sched_input in;
		struct sched_est_input e;

		idle(g, ng);
		for (size_t i = 0; i < ng; i++)
			if (rnd(&s) % 3 == 0) {
				bool sh = rnd(&s) % 2;

				if (sh) {
					g[i].nshared = 1;
					g[i].booked_mb = 20000;
				} else
					g[i].exclusive = true;
				g[i].usable = rnd(&s) % 10 != 0;
				r[nr] = (struct sched_running){ .gpu_mask = 1ULL << i, .memory_mb = 1000,
							       .end_by = rnd(&s) % 2 ? NOW + 1 + (double)(rnd(&s) % 900) : 0 };
				rx[nr] = (struct sched_est_running){ .id = 1000 + (int64_t)i, .end = r[nr].end_by,
								     .gpus = 1, .shared = sh, .gpu_memory_mb = 20000 };
				nr++;
			}
		for (int k = 0; k < 3; k++)
			q[k] = (struct sched_quota){ .max_jobs = rnd(&s) % 2 ? -1 : (int64_t)(rnd(&s) % 3),
						     .max_gpus = rnd(&s) % 2 ? -1 : (int64_t)(rnd(&s) % 4),
						     .running_jobs = (int64_t)(rnd(&s) % 2) };
		rv[0] = (struct sched_resv){ .id = 1, .uid = 1, .gpu_mask = 1, .start = NOW + 100, .end = NOW + 900 };
		rv[1] = (struct sched_resv){ .id = 2, .uid = 2, .gpu_mask = 6, .start = NOW - 10, .end = NOW + 50 };
		for (size_t i = 0; i < nj; i++)
			jobs[i] = (struct sched_job){
				.id = (int64_t)i + 1,
				.priority = 10 + (int)(rnd(&s) % 3) * 5,
				.own_priority = (int)(rnd(&s) % 3),
				.gpus = (int)(rnd(&s) % 4),
				.shared = rnd(&s) % 4 == 0,
				.gpu_memory_mb = 10000,
				.memory_mb = rnd(&s) % 3 ? 0 : 50000,
				.time_limit_secs = rnd(&s) % 2 ? (int64_t)(rnd(&s) % 1000) + 1 : 0,
				.group_id = rnd(&s) % 4 == 0 ? 77 : 0,
				.group_cap = 2,
				.blocked = rnd(&s) % 8 == 0 ? "Dependency" : NULL,
				.uid = (uint32_t)(rnd(&s) % 3),
				.user_quota = (int)(rnd(&s) % 4),
				.usage = (double)(rnd(&s) % 3),
			};
		in = (struct sched_input){ .jobs = jobs, .njobs = nj, .running = r, .nrunning = nr, .gpus = g,
					   .ngpus = ng, .mem_total_mb = 100000, .now = NOW, .quotas = q,
					   .nquotas = 3, .resvs = rv, .nresvs = 2, .no_limit_horizon = 3600,
					   .strategy = rnd(&s) % 2 ? SCHED_RANDOM : SCHED_SEQUENTIAL,
					   .seed = rnd(&s) };
		e = (struct sched_est_input){ .in = &in, .running = rx, .default_runtime = rnd(&s) % 2 ? 600 : 0 };
		nstart = sched_pass(&in, d);
		sched_estimate(&e, o);
		for (size_t i = 0; i < nj; i++) {
			const struct sched_estimate *x = est_of(o, nj, d[i].id);

			if (!d[i].reason) {
				assert_true(x->start == NOW);
				assert_int_equal(x->gpu_mask, d[i].gpu_mask);
			} else
				assert_true(x->start > NOW || x->why != EST_KNOWN);
			nnow += x->start == NOW && x->why == EST_KNOWN;
		}
		assert_int_equal(nnow, nstart);
	}
}

/* One random machine and queue for the comparisons below: GPUs busy or
 * not, running jobs ending or not, quotas, reservations, shared jobs, host
 * memory and CPUs, groups with caps, dependencies and begin times, own
 * priorities or not (own: they may move jobs). */
struct rq {
	struct sched_gpu g[12];
	struct sched_running r[12];
	struct sched_est_running rx[12];
	struct sched_job jobs[300];
	struct sched_est_job ej[300];
	int64_t deps[300];
	struct sched_quota q[3];
	struct sched_resv rv[2];
	struct sched_input in;
	struct sched_est_input e;
};

static void random_queue(struct rq *x, uint64_t *s, size_t nj, bool own)
{
	size_t ng = 1 + rnd(s) % 12, nr = 0;	/* over 8: the tree's last GPU class is "any" */

	memset(x, 0, sizeof *x);
	idle(x->g, ng);
	for (size_t i = 0; i < ng; i++)
		if (rnd(s) % 2 == 0) {
			bool sh = rnd(s) % 4 == 0;

			if (sh) {
				x->g[i].nshared = 1;
				x->g[i].booked_mb = 20000;
			} else
				x->g[i].exclusive = true;
			x->g[i].usable = rnd(s) % 12 != 0;
			x->r[nr] = (struct sched_running){ .gpu_mask = 1ULL << i, .memory_mb = 1000, .cpus = 1,
							   .end_by = rnd(s) % 4 ? NOW + 1 + (double)(rnd(s) % 900) : 0 };
			x->rx[nr] = (struct sched_est_running){ .id = 1000 + (int64_t)i, .end = x->r[nr].end_by, .gpus = 1,
								.shared = sh, .gpu_memory_mb = 20000, .user_quota = 1 };
			nr++;
		}
	for (int k = 0; k < 3; k++)
		x->q[k] = (struct sched_quota){ .max_jobs = rnd(s) % 3 ? -1 : (int64_t)(rnd(s) % 4) + 1,
						.max_gpus = rnd(s) % 3 ? -1 : (int64_t)(rnd(s) % 6) + 1 };
	x->rv[0] = (struct sched_resv){ .id = 1, .uid = 1, .gpu_mask = 1, .start = NOW + 100, .end = NOW + 900 };
	x->rv[1] = (struct sched_resv){ .id = 2, .uid = 2, .gpu_mask = 6, .start = NOW - 10, .end = NOW + 50 };
	for (size_t i = 0; i < nj; i++) {
		x->jobs[i] = (struct sched_job){
			.id = (int64_t)i + 1,
			.priority = 10 + (int)(rnd(s) % 3) * 5,
			.own_priority = own ? (int)(rnd(s) % 3) : 0,
			.gpus = (int)(rnd(s) % (ng > 8 ? 11 : 4)),
			.shared = rnd(s) % 6 == 0,
			.gpu_memory_mb = 10000,
			.memory_mb = rnd(s) % 3 ? 0 : 20000,
			.cpus = (int)(rnd(s) % 3),
			.time_limit_secs = rnd(s) % 3 ? (int64_t)(rnd(s) % 1000) + 1 : 0,
			.group_id = rnd(s) % 5 == 0 ? 77 : 0,
			.group_cap = 2,
			.uid = (uint32_t)(rnd(s) % 3),
			.user_quota = (int)(rnd(s) % 4),
			.usage = (double)(rnd(s) % 3),
		};
		if (i && rnd(s) % 10 == 0) {	/* waits for an earlier job */
			x->deps[i] = x->jobs[rnd(s) % i].id;
			x->ej[i] = (struct sched_est_job){ .deps = &x->deps[i], .ndeps = 1 };
			x->jobs[i].blocked = "Dependency";
		} else if (rnd(s) % 15 == 0) {
			x->ej[i] = (struct sched_est_job){ .begin_at = NOW + (double)(rnd(s) % 2000) };
			x->jobs[i].blocked = "BeginTime";
		}
	}
	x->in = (struct sched_input){ .jobs = x->jobs, .njobs = nj, .running = x->r, .nrunning = nr, .gpus = x->g,
				      .ngpus = ng, .mem_total_mb = 100000, .cpus_total = rnd(s) % 2 ? 0 : 8,
				      .now = NOW, .quotas = x->q, .nquotas = 3, .resvs = x->rv,
				      .nresvs = rnd(s) % 3 ? 2 : 0, .no_limit_horizon = 3600,
				      .strategy = rnd(s) % 2 ? SCHED_RANDOM : SCHED_SEQUENTIAL, .seed = rnd(s) };
	x->e = (struct sched_est_input){ .in = &x->in, .jobs = x->ej, .running = x->rx,
					 .default_runtime = rnd(s) % 2 ? 600 : 0, .max_work = 100000000,
					 .max_steps = 1000000 };
}

/* The steps after the first look at the head of the queue and at the jobs
 * that may still start only: for random queues every job's estimate is
 * the one of full passes over the whole queue at each step (start, end,
 * GPUs, and why not). */
static void test_prefix_steps_equal_full_passes(void **state)
{
	uint64_t s = 0xfeedbeefULL;
	static struct rq x;
	static struct sched_estimate a[300], b[300];

	(void)state;
	for (int round = 0; round < 600; round++) {
		size_t nj = round % 10 == 0 ? 300 : 1 + rnd(&s) % 120, na, nb;

		random_queue(&x, &s, nj, round % 4 == 3);
		x.e.full_passes = true;
		nb = sched_estimate(&x.e, b);
		x.e.full_passes = false;
		na = sched_estimate(&x.e, a);
		assert_int_equal(na, nb);
		for (size_t i = 0; i < nj; i++) {
			if (a[i].start != b[i].start || a[i].end != b[i].end || a[i].gpu_mask != b[i].gpu_mask ||
			    a[i].why != b[i].why)
				fail_msg("round %d job %lld: %g-%g on %llx (%d), full passes %g-%g on %llx (%d)", round,
					 (long long)a[i].id, a[i].start, a[i].end, (unsigned long long)a[i].gpu_mask, a[i].why,
					 b[i].start, b[i].end, (unsigned long long)b[i].gpu_mask, b[i].why);
		}
	}
}

/* A long queue behind a busy machine: every job placed (each has a time
 * limit), the same as full passes, in order of the queue for one GPU. */
static void test_long_queue_all_placed(void **state)
{
	static struct sched_job jobs[3000];
	static struct sched_estimate a[3000], b[3000];
	struct sched_gpu g[2];
	struct sched_running r[2] = { { .gpu_mask = 1, .end_by = NOW + 100 }, { .gpu_mask = 2, .end_by = NOW + 50 } };
	struct sched_input in;
	struct sched_est_input e;

	(void)state;
	idle(g, 2);
	g[0].exclusive = g[1].exclusive = true;
	for (int i = 0; i < 3000; i++)
		jobs[i] = (struct sched_job){ .id = i + 1, .priority = i % 7 == 0 ? 20 : 10, .gpus = 1 + i % 2,
					      .time_limit_secs = 60 + (i * 37) % 600 };
	in = (struct sched_input){ .jobs = jobs, .njobs = 3000, .running = r, .nrunning = 2, .gpus = g, .ngpus = 2,
				   .now = NOW };
	e = (struct sched_est_input){ .in = &in };
	assert_int_equal(sched_estimate(&e, a), 3000);
	e.full_passes = true;
	e.max_work = 100000000;
	assert_int_equal(sched_estimate(&e, b), 3000);
	for (int i = 0; i < 3000; i++) {
		assert_true(a[i].why == EST_KNOWN && a[i].start == b[i].start && a[i].gpu_mask == b[i].gpu_mask);
		assert_true(a[i].start >= NOW + 50);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_for_running_limit),
		cmocka_unit_test(test_cpus_of_simulated_starts),
		cmocka_unit_test(test_no_limit_unknown_unless_default),
		cmocka_unit_test(test_dependency_and_begin),
		cmocka_unit_test(test_reservation_and_quota),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_first_step_is_the_pass),
		cmocka_unit_test(test_prefix_steps_equal_full_passes),
		cmocka_unit_test(test_long_queue_all_placed),
	};

	return cmocka_run_group_tests(tests, 0, NULL);
}
