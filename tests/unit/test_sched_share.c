/* test_sched_share.c — the pure scheduler pass and fair use: quotas, fair
 * share, reservations, each alone and with priority, backfill and group
 * caps, with and without GPUs; and a property test over random inputs (no
 * decision breaks a quota, a reservation, a group cap or an exclusive GPU). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

#define NOW 100000.0
#define GB 1024

static struct sched_gpu gpus[8];

static void idle(size_t n)
{
	for (size_t i = 0; i < n; i++)
		gpus[i] = (struct sched_gpu){ .index = (int)i, .usable = true, .total_mb = 80 * GB };
}

static struct sched_input input(const struct sched_job *jobs, size_t n, size_t ng)
{
	return (struct sched_input){ .jobs = jobs, .njobs = n, .gpus = gpus, .ngpus = ng, .now = NOW,
				     .no_limit_horizon = 3600 };
}

/* One pass over jobs on ng idle-or-set GPUs with these subjects and
 * reservations; returns how many start. */
static size_t pass(const struct sched_job *jobs, size_t n, size_t ng, const struct sched_quota *q, size_t nq,
		   const struct sched_resv *r, size_t nr, struct sched_decision *d)
{
	struct sched_input in = input(jobs, n, ng);

	in.quotas = q;
	in.nquotas = nq;
	in.resvs = r;
	in.nresvs = nr;
	return sched_pass(&in, d);
}

static const struct sched_decision *find(const struct sched_decision *d, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (d[i].id == id)
			return &d[i];
	fail_msg("no decision for job %lld", (long long)id);
	return NULL;
}

static struct sched_quota unlimited(void)
{
	return (struct sched_quota){ .max_jobs = -1, .max_gpus = -1 };
}

/* ---- quotas ------------------------------------------------------------- */

static void test_quota_max_running_jobs(void **state)
{
	struct sched_quota q[] = { { .max_jobs = 3, .max_gpus = -1, .running_jobs = 1 } };
	struct sched_job jobs[4];
	struct sched_decision d[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		jobs[i] = (struct sched_job){ .id = i + 1, .priority = 10, .user_quota = 1 };
	assert_int_equal(pass(jobs, 4, 0, q, 1, NULL, 0, d), 2);	/* 1 running + 2 = 3 */
	assert_null(find(d, 4, 1)->reason);
	assert_null(find(d, 4, 2)->reason);
	assert_string_equal(find(d, 4, 3)->reason, "Quota");
	assert_int_equal(find(d, 4, 3)->quota, 1);
	assert_int_equal(find(d, 4, 3)->limit, LIM_JOBS);
	/* the input is not changed */
	assert_int_equal(q[0].running_jobs, 1);
}

static void test_quota_max_running_gpus_and_project(void **state)
{
	struct sched_quota q[] = {
		{ .max_jobs = -1, .max_gpus = 2 },		/* user alice */
		{ .max_jobs = -1, .max_gpus = 3, .running_gpus = 1 },	/* project p */
		unlimited(),					/* user bob */
	};
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 2, .user_quota = 1 },
		{ .id = 2, .priority = 10, .gpus = 1, .user_quota = 1 },	/* alice over 2 */
		{ .id = 3, .priority = 10, .gpus = 1, .user_quota = 1 },
		{ .id = 4, .priority = 10, .gpus = 2, .user_quota = 3, .project_quota = 2 }, /* p: 1+2 = 3 ok */
		{ .id = 5, .priority = 10, .gpus = 1, .user_quota = 3, .project_quota = 2 }, /* p over */
		{ .id = 6, .priority = 10, .gpus = 0, .user_quota = 1 },	/* no GPUs: not held by GPU limits */
	};
	struct sched_decision d[6];

	(void)state;
	idle(8);
		pass(jobs, 6, 8, q, 3, NULL, 0, d);
	assert_null(find(d, 6, 1)->reason);
	assert_string_equal(find(d, 6, 2)->reason, "Quota");
	assert_int_equal(find(d, 6, 2)->limit, LIM_GPUS);
	assert_int_equal(find(d, 6, 2)->quota, 1);
	assert_string_equal(find(d, 6, 3)->reason, "Quota");
	assert_null(find(d, 6, 4)->reason);
	assert_string_equal(find(d, 6, 5)->reason, "Quota");
	assert_int_equal(find(d, 6, 5)->quota, 2);
	assert_null(find(d, 6, 6)->reason);
}

static void test_quota_gpu_hours_used_up(void **state)
{
	struct sched_quota q[] = { { .max_jobs = -1, .max_gpus = -1, .day_used_up = true } };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .user_quota = 1 },
		{ .id = 2, .priority = 10, .gpus = 0, .user_quota = 1 },
	};
	struct sched_decision d[2];

	(void)state;
	idle(2);
		assert_int_equal(pass(jobs, 2, 2, q, 1, NULL, 0, d), 1);
	assert_string_equal(find(d, 2, 1)->reason, "Quota");
	assert_int_equal(find(d, 2, 1)->limit, LIM_GPU_HOURS);
	assert_null(find(d, 2, 2)->reason);
}

/* A job held by its quota does not hold back the jobs after it, and the
 * higher priority job of the limited user gets the one slot. */
static void test_quota_with_priority_and_others(void **state)
{
	struct sched_quota q[] = { { .max_jobs = 1, .max_gpus = -1 }, unlimited() };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .user_quota = 1 },
		{ .id = 2, .priority = 50, .gpus = 1, .user_quota = 1 },
		{ .id = 3, .priority = 5, .gpus = 1, .user_quota = 2 },
	};
	struct sched_decision d[3];

	(void)state;
	idle(2);
		assert_int_equal(pass(jobs, 3, 2, q, 2, NULL, 0, d), 2);
	assert_null(find(d, 3, 2)->reason);
	assert_string_equal(find(d, 3, 1)->reason, "Quota");
	assert_null(find(d, 3, 3)->reason);
}

/* Group caps and quotas both hold; the group cap is checked first. */
static void test_quota_with_group_cap(void **state)
{
	struct sched_quota q[] = { { .max_jobs = 3, .max_gpus = -1 } };
	struct sched_running run[] = { { .group_id = 7 } };
	struct sched_job jobs[] = {
		{ .id = 8, .priority = 10, .group_id = 7, .group_cap = 2, .user_quota = 1 },
		{ .id = 9, .priority = 10, .group_id = 7, .group_cap = 2, .user_quota = 1 },
		{ .id = 10, .priority = 10, .user_quota = 1 },
		{ .id = 11, .priority = 10, .user_quota = 1 },
		{ .id = 12, .priority = 10, .user_quota = 1 },
	};
	struct sched_decision d[5];
	struct sched_input in;

	(void)state;
	in = input(jobs, 5, 0);
	in.running = run;
	in.nrunning = 1;
	in.quotas = q;
	in.nquotas = 1;
	assert_int_equal(sched_pass(&in, d), 3);
	assert_null(find(d, 5, 8)->reason);
	assert_string_equal(find(d, 5, 9)->reason, "Resources");	/* group cap 2 reached */
	assert_int_equal(find(d, 5, 9)->limit, LIM_GROUP);
	assert_null(find(d, 5, 10)->reason);
	assert_null(find(d, 5, 11)->reason);
	assert_string_equal(find(d, 5, 12)->reason, "Quota");
}

/* ---- fair share --------------------------------------------------------- */

static void test_fair_share_within_priority(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .uid = 1, .usage = 7200 },	/* alice used 2 GPU-h */
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 2, .usage = 0 },		/* bob none */
		{ .id = 3, .priority = 20, .gpus = 1, .uid = 1, .usage = 7200 },	/* priority wins */
	};
	struct sched_decision d[3];
	struct sched_input in;

	(void)state;
	idle(2);
	in = input(jobs, 3, 2);
	assert_int_equal(sched_pass(&in, d), 2);
	assert_int_equal(d[0].id, 3);
	assert_int_equal(d[1].id, 2);
	assert_int_equal(d[2].id, 1);
	assert_string_equal(d[2].reason, "Resources");
}

/* A user's own priority (own_priority; the daemon passes the priority that
 * counts across users as `priority`): bob, 7x alice's usage, asks for 255
 * on every job: alice still goes first, and bob's 255 job goes before bob's
 * others. Across users only the queue order and usage decide. */
static void test_own_priority_does_not_beat_fair_share(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .own_priority = 10, .gpus = 1, .uid = 2, .usage = 7 * 3600 },
		{ .id = 2, .priority = 10, .own_priority = 255, .gpus = 1, .uid = 2, .usage = 7 * 3600 },
		{ .id = 3, .priority = 10, .own_priority = 10, .gpus = 1, .uid = 1, .usage = 3600 },
		{ .id = 4, .priority = 10, .own_priority = 0, .gpus = 1, .uid = 1, .usage = 3600 },
	};
	struct sched_decision d[4];
	struct sched_input in;

	(void)state;
	idle(1);
	in = input(jobs, 4, 1);
	assert_int_equal(sched_pass(&in, d), 1);
	assert_int_equal(d[0].id, 3);	/* alice: less usage */
	assert_null(d[0].reason);
	assert_int_equal(d[1].id, 4);	/* alice's own 0 does not let bob ahead */
	assert_int_equal(d[2].id, 2);	/* bob's 255 first among bob's */
	assert_int_equal(d[3].id, 1);
}

/* Equal usage (or fair share off): the queue order decides which place is
 * whose; each user's jobs take their own places by own priority. */
static void test_own_priority_keeps_the_places_of_others(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .own_priority = 1, .gpus = 1, .uid = 1 },	/* alice */
		{ .id = 2, .priority = 10, .own_priority = 10, .gpus = 1, .uid = 2 },	/* bob */
		{ .id = 3, .priority = 10, .own_priority = 200, .gpus = 1, .uid = 1 },	/* alice */
		{ .id = 4, .priority = 10, .own_priority = 255, .gpus = 1, .uid = 2 },	/* bob */
		{ .id = 5, .priority = 10, .own_priority = 50, .gpus = 1, .uid = 1 },	/* alice */
	};
	int64_t want[] = { 3, 4, 5, 2, 1 };
	struct sched_decision d[5];
	struct sched_input in;

	(void)state;
	idle(1);
	in = input(jobs, 5, 1);
	assert_int_equal(sched_pass(&in, d), 1);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(d[i].id, want[i]);
}

/* A priority an admin set counts across users (the daemon passes it as
 * `priority`): it beats usage; the others keep their order. */
static void test_admin_priority_wins_across_users(void **state)
{
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .own_priority = 255, .gpus = 1, .uid = 1, .usage = 0 },
		{ .id = 2, .priority = 40, .own_priority = 40, .gpus = 1, .uid = 2, .usage = 7 * 3600 },
		{ .id = 3, .priority = 10, .own_priority = 10, .gpus = 1, .uid = 2, .usage = 7 * 3600 },
		{ .id = 4, .priority = 10, .own_priority = 10, .gpus = 1, .uid = 1, .usage = 0 },
	};
	int64_t want[] = { 2, 1, 4, 3 };
	struct sched_decision d[4];
	struct sched_input in;

	(void)state;
	idle(1);
	in = input(jobs, 4, 1);
	assert_int_equal(sched_pass(&in, d), 1);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(d[i].id, want[i]);
	assert_null(d[0].reason);
	/* one user (a personal daemon: own == priority): priority orders */
	for (size_t i = 0; i < 4; i++) {
		jobs[i].uid = 1;
		jobs[i].usage = 0;
		jobs[i].priority = jobs[i].own_priority;
	}
	in = input(jobs, 4, 1);
	sched_pass(&in, d);
	assert_int_equal(d[0].id, 1);
	assert_int_equal(d[1].id, 2);
	assert_int_equal(d[2].id, 3);
	assert_int_equal(d[3].id, 4);
}

/* Fair share reorders, but the blocked job's backfill promise holds. */
static void test_fair_share_with_backfill(void **state)
{
	struct sched_running run[] = { { .gpu_mask = 1, .end_by = NOW + 100 } };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 2, .uid = 2, .usage = 0 },		/* head: waits for GPU 0 */
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 1, .usage = 50 },		/* no limit: would delay it */
		{ .id = 3, .priority = 10, .gpus = 1, .uid = 3, .usage = 60, .time_limit_secs = 50 },
	};
	struct sched_decision d[3];
	struct sched_input in;

	(void)state;
	idle(2);
	gpus[0].exclusive = true;
	in = input(jobs, 3, 2);
	in.running = run;
	in.nrunning = 1;
	assert_int_equal(sched_pass(&in, d), 1);
	assert_string_equal(find(d, 3, 1)->reason, "Resources");
	assert_true(fabs(find(d, 3, 1)->expected_start - (NOW + 100)) < 1e-6);
	assert_string_equal(find(d, 3, 2)->reason, "Priority");
	assert_null(find(d, 3, 3)->reason);
}

/* ---- reservations ------------------------------------------------------- */

static void test_reservation_keeps_other_users_off(void **state)
{
	struct sched_resv r[] = { { .id = 4, .uid = 2, .gpu_mask = 2, .start = NOW + 600, .end = NOW + 4200 } };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .uid = 1 },			/* takes GPU 0 */
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 1 },			/* no limit: kept off */
		{ .id = 3, .priority = 10, .gpus = 1, .uid = 1, .time_limit_secs = 600 },	/* ends in time */
	};
	struct sched_decision d[3];

	(void)state;
	idle(2);
		assert_int_equal(pass(jobs, 3, 2, NULL, 0, r, 1, d), 2);
	assert_int_equal(find(d, 3, 1)->gpu_mask, 1);
	assert_string_equal(find(d, 3, 2)->reason, "Reservation");	/* would run into the window */
	assert_int_equal(find(d, 3, 2)->resv_id, 4);
	assert_int_equal(find(d, 3, 3)->gpu_mask, 2);
}

static void test_reservation_reason_and_owner(void **state)
{
	struct sched_resv r[] = { { .id = 4, .uid = 2, .gpu_mask = 2, .start = NOW - 10, .end = NOW + 3600 } };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .uid = 1, .time_limit_secs = 60 },	/* GPU 0 */
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 1, .time_limit_secs = 60 },	/* only GPU 1: kept */
		{ .id = 3, .priority = 10, .gpus = 1, .uid = 2 },			/* its owner: GPU 1 */
		{ .id = 4, .priority = 10, .gpus = 0, .uid = 1 },			/* no GPUs: not concerned */
	};
	struct sched_decision d[4];

	(void)state;
	idle(2);
		assert_int_equal(pass(jobs, 4, 2, NULL, 0, r, 1, d), 3);
	assert_string_equal(find(d, 4, 2)->reason, "Reservation");
	assert_int_equal(find(d, 4, 2)->resv_id, 4);
	assert_true(fabs(find(d, 4, 2)->expected_start - (NOW + 3600)) < 1e-6);
	assert_int_equal(find(d, 4, 3)->gpu_mask, 2);
	assert_null(find(d, 4, 4)->reason);
}

/* The reserved user's job prefers the GPU kept for them, leaving the
 * others' GPU to others. */
static void test_reservation_owner_prefers_reserved_gpu(void **state)
{
	struct sched_resv r[] = { { .id = 1, .uid = 2, .gpu_mask = 4, .start = NOW, .end = NOW + 1800 } };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .uid = 2 },
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 1 },
		{ .id = 3, .priority = 10, .gpus = 1, .uid = 1 },
	};
	struct sched_decision d[3];

	(void)state;
	idle(3);
		assert_int_equal(pass(jobs, 3, 3, NULL, 0, r, 1, d), 3);
	assert_int_equal(find(d, 3, 1)->gpu_mask, 4);
	assert_int_equal(find(d, 3, 2)->gpu_mask | find(d, 3, 3)->gpu_mask, 3);
}

/* Over reservations: a quota still holds for the reserved user, and a
 * reservation that ended is gone. */
static void test_reservation_with_quota_and_past(void **state)
{
	struct sched_quota q[] = { { .max_jobs = -1, .max_gpus = 1 } };
	struct sched_resv r[] = {
		{ .id = 1, .uid = 2, .gpu_mask = 3, .start = NOW - 100, .end = NOW + 100 },
		{ .id = 2, .uid = 3, .gpu_mask = 4, .start = NOW - 200, .end = NOW },	/* over */
	};
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .uid = 2, .user_quota = 1 },
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 2, .user_quota = 1 },
		{ .id = 3, .priority = 10, .gpus = 1, .uid = 1 },
	};
	struct sched_decision d[3];

	(void)state;
	idle(3);
		assert_int_equal(pass(jobs, 3, 3, q, 1, r, 2, d), 2);
	assert_null(find(d, 3, 1)->reason);
	assert_string_equal(find(d, 3, 2)->reason, "Quota");
	assert_int_equal(find(d, 3, 3)->gpu_mask, 4);
}

/* Fair share and quota: the user with less usage goes first, but not over
 * their quota; the next user's job takes the slot. */
static void test_fair_share_with_quota(void **state)
{
	struct sched_quota q[] = { { .max_jobs = 1, .max_gpus = -1, .running_jobs = 1 }, unlimited() };
	struct sched_job jobs[] = {
		{ .id = 1, .priority = 10, .gpus = 1, .uid = 1, .usage = 9000, .user_quota = 2 },
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 2, .usage = 0, .user_quota = 1 },
	};
	struct sched_decision d[2];

	(void)state;
	idle(1);
	assert_int_equal(pass(jobs, 2, 1, q, 2, NULL, 0, d), 1);
	assert_int_equal(d[0].id, 2);
	assert_string_equal(d[0].reason, "Quota");
	assert_null(d[1].reason);
}

/* Everything at once on 4 GPUs: priority, fair share, a quota, a group
 * cap, a reservation and the backfill promise. */
static void test_all_rules_together(void **state)
{
	struct sched_quota q[] = { { .max_jobs = -1, .max_gpus = 2 }, unlimited(), unlimited() };
	struct sched_resv r[] = { { .id = 9, .uid = 3, .gpu_mask = 8, .start = NOW + 1800, .end = NOW + 5400 } };
	struct sched_running run[] = { { .gpu_mask = 1, .end_by = NOW + 1000 } };
	struct sched_job jobs[] = {
		/* alice (uid 1): quota of 2 GPUs */
		{ .id = 1, .priority = 10, .gpus = 2, .uid = 1, .usage = 100, .user_quota = 1 },
		{ .id = 2, .priority = 10, .gpus = 1, .uid = 1, .usage = 100, .user_quota = 1 },
		/* bob (uid 2): a batch capped at 1, less usage than alice */
		{ .id = 3, .priority = 10, .gpus = 1, .uid = 2, .usage = 0, .user_quota = 2, .group_id = 3, .group_cap = 1,
		  .time_limit_secs = 600 },
		{ .id = 4, .priority = 10, .gpus = 1, .uid = 2, .usage = 0, .user_quota = 2, .group_id = 3, .group_cap = 1 },
		/* carol (uid 3): high priority, needs all 4 GPUs: the blocked head */
		{ .id = 5, .priority = 30, .gpus = 4, .uid = 3, .user_quota = 3 },
		/* dave (uid 4): no time limit, GPU 3 reserved for carol in 30 min */
		{ .id = 6, .priority = 10, .gpus = 1, .uid = 4, .usage = 0 },
	};
	struct sched_decision d[6];
	struct sched_input in;

	(void)state;
	idle(4);
	gpus[0].exclusive = true;
	in = input(jobs, 6, 4);
	in.quotas = q;
	in.nquotas = 3;
	in.resvs = r;
	in.nresvs = 1;
	in.running = run;
	in.nrunning = 1;
	assert_int_equal(sched_pass(&in, d), 1);
	/* carol's 4-GPU job waits for GPU 0 (at NOW + 1000) */
	assert_int_equal(d[0].id, 5);
	assert_string_equal(d[0].reason, "Resources");
	assert_true(fabs(d[0].expected_start - (NOW + 1000)) < 1e-6);
	/* bob's first job ends before that: backfilled on GPU 1 */
	assert_null(find(d, 6, 3)->reason);
	assert_int_equal(find(d, 6, 3)->gpu_mask, 2);
	/* bob's second: his batch cap */
	assert_string_equal(find(d, 6, 4)->reason, "Resources");
	/* dave would run into carol's reservation on GPU 3; GPU 2 is promised */
	assert_string_equal(find(d, 6, 6)->reason, "Priority");
	/* alice (more usage, after dave): 2 GPUs keep her quota, but GPU 3 is
	 * carol's soon; her 1-GPU job fits GPU 2, which is promised */
	assert_string_equal(find(d, 6, 1)->reason, "Reservation");
	assert_int_equal(find(d, 6, 1)->resv_id, 9);
	assert_string_equal(find(d, 6, 2)->reason, "Priority");
	assert_int_equal(d[5].id, 2);
}

/* ---- property: random inputs -------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_random_inputs_keep_every_rule(void **state)
{
	uint64_t seed = 0x9E3779B97F4A7C15ULL;

	(void)state;
	for (int round = 0; round < 3000; round++) {
		size_t ng = 1 + rnd(&seed) % 8, nj = rnd(&seed) % 20, nq = 1 + rnd(&seed) % 4, nr = rnd(&seed) % 4;
		size_t nrun = rnd(&seed) % 4;
		struct sched_job jobs[20];
		struct sched_decision d[20];
		struct sched_quota q[4];
		struct sched_resv r[4];
		struct sched_running run[4];
		int64_t started_jobs[4] = { 0 }, started_gpus[4] = { 0 };
		int group_cap[3] = { 0, 1 + (int)(rnd(&seed) % 2), 1 + (int)(rnd(&seed) % 3) }, in_group[3] = { 0 };
		uint64_t used = 0;
		struct sched_input in;

		idle(ng);
		for (size_t i = 0; i < nq; i++)
			q[i] = (struct sched_quota){ .max_jobs = (int64_t)(rnd(&seed) % 5) - 1,
						     .max_gpus = (int64_t)(rnd(&seed) % 5) - 1,
						     .running_jobs = (int64_t)(rnd(&seed) % 3),
						     .running_gpus = (int64_t)(rnd(&seed) % 3),
						     .day_used_up = rnd(&seed) % 7 == 0 };
		for (size_t i = 0; i < nr; i++) {
			double start = NOW + (double)(rnd(&seed) % 7200) - 3600;

			r[i] = (struct sched_resv){ .id = (int64_t)i + 1, .uid = (uint32_t)(rnd(&seed) % 3),
						    .gpu_mask = rnd(&seed) & ((1ULL << ng) - 1), .start = start,
						    .end = start + 1800 * (double)(1 + rnd(&seed) % 4) };
		}
		for (size_t i = 0; i < nrun; i++) {
			int g = (int)(rnd(&seed) % ng);

			gpus[g].exclusive = true;
			used |= 1ULL << g;
			run[i] = (struct sched_running){ .gpu_mask = 1ULL << g,
							 .end_by = rnd(&seed) % 2 ? NOW + (double)(rnd(&seed) % 5000) : 0,
							 .group_id = (int64_t)(rnd(&seed) % 3) };
			in_group[run[i].group_id]++;
		}
		for (size_t i = 0; i < nj; i++)
			jobs[i] = (struct sched_job){
				.id = (int64_t)i + 1, .priority = (int)(rnd(&seed) % 3), .gpus = (int)(rnd(&seed) % 3),
				.time_limit_secs = rnd(&seed) % 2 ? (int64_t)(rnd(&seed) % 7200) + 1 : 0,
				.uid = (uint32_t)(rnd(&seed) % 3), .user_quota = (int)(rnd(&seed) % (nq + 1)),
				.project_quota = (int)(rnd(&seed) % (nq + 1)), .usage = (double)(rnd(&seed) % 3),
			};
		for (size_t i = 0; i < nj; i++) {
			jobs[i].group_id = (int64_t)(rnd(&seed) % 3);
			jobs[i].group_cap = group_cap[jobs[i].group_id];
		}
		in = input(jobs, nj, ng);
		in.quotas = q;
		in.nquotas = nq;
		in.resvs = r;
		in.nresvs = nr;
		in.running = run;
		in.nrunning = nrun;
		sched_pass(&in, d);
		for (size_t i = 0; i < nj; i++) {
			const struct sched_job *j;
			int subj[2];
			double end;

			if (d[i].reason)
				continue;
			j = &jobs[d[i].id - 1];
			/* exclusive GPUs: none given twice, none that was busy */
			assert_int_equal(__builtin_popcountll(d[i].gpu_mask), j->gpus);
			assert_false(d[i].gpu_mask & used);
			used |= d[i].gpu_mask;
			/* reservations of other users that the job would reach */
			end = NOW + (j->time_limit_secs ? (double)j->time_limit_secs : 3600);
			for (size_t k = 0; k < nr; k++)
				if (r[k].uid != j->uid && r[k].end > NOW && r[k].start < end)
					assert_false(d[i].gpu_mask & r[k].gpu_mask);
			/* group caps */
			if (j->group_id) {
				assert_true(in_group[j->group_id] < j->group_cap);
				in_group[j->group_id]++;
			}
			subj[0] = j->user_quota;
			subj[1] = j->project_quota;
			for (int k = 0; k < 2; k++)
				if (subj[k] && (k == 0 || subj[1] != subj[0])) {
					started_jobs[subj[k] - 1]++;
					started_gpus[subj[k] - 1] += j->gpus;
					if (j->gpus)
						assert_false(q[subj[k] - 1].day_used_up);
				}
		}
		/* quotas: no start pushed a subject over a limit */
		for (size_t k = 0; k < nq; k++) {
			if (q[k].max_jobs >= 0 && started_jobs[k])
				assert_true(q[k].running_jobs + started_jobs[k] <= q[k].max_jobs);
			if (q[k].max_gpus >= 0 && started_gpus[k])
				assert_true(q[k].running_gpus + started_gpus[k] <= q[k].max_gpus);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quota_max_running_jobs),
		cmocka_unit_test(test_quota_max_running_gpus_and_project),
		cmocka_unit_test(test_quota_gpu_hours_used_up),
		cmocka_unit_test(test_quota_with_priority_and_others),
		cmocka_unit_test(test_quota_with_group_cap),
		cmocka_unit_test(test_fair_share_within_priority),
		cmocka_unit_test(test_own_priority_does_not_beat_fair_share),
		cmocka_unit_test(test_own_priority_keeps_the_places_of_others),
		cmocka_unit_test(test_admin_priority_wins_across_users),
		cmocka_unit_test(test_fair_share_with_backfill),
		cmocka_unit_test(test_reservation_keeps_other_users_off),
		cmocka_unit_test(test_reservation_reason_and_owner),
		cmocka_unit_test(test_reservation_owner_prefers_reserved_gpu),
		cmocka_unit_test(test_reservation_with_quota_and_past),
		cmocka_unit_test(test_fair_share_with_quota),
		cmocka_unit_test(test_all_rules_together),
		cmocka_unit_test(test_random_inputs_keep_every_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
