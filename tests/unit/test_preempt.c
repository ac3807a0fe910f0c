/* test_preempt.c — choosing the preemptible jobs to stop (core/preempt.c)
 * and sched_pass's use of it (core/sched.c): each rule of preempt.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "preempt.h"
#include "sched.h"

#define C(id_, start_, gpus_) { .id = (id_), .start = (start_), .gpus = (gpus_) }

static void test_fewest(void **state)
{
	/* Need 2 more: one 2-GPU job beats two 1-GPU jobs, even if older. */
	struct preempt_cand c[] = { C(1, 10, 2), C(2, 20, 1), C(3, 30, 1) };
	int64_t out[3];
	bool met;
	size_t n = preempt_choose(2, 0, c, 3, out, &met);

	(void)state;
	assert_true(met);
	assert_int_equal(n, 1);
	assert_int_equal(out[0], 1);
}

static void test_newest(void **state)
{
	/* Four 1-GPU jobs, need 2: the two newest. */
	struct preempt_cand c[] = { C(1, 10, 1), C(2, 40, 1), C(3, 30, 1), C(4, 20, 1) };
	int64_t out[4];
	bool met;
	size_t n = preempt_choose(2, 0, c, 4, out, &met);

	(void)state;
	assert_true(met);
	assert_int_equal(n, 2);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[1], 3);
}

static void test_not_more_than_needed(void **state)
{
	/* One GPU is free: only one more is needed. */
	struct preempt_cand c[] = { C(1, 10, 1), C(2, 20, 1), C(3, 30, 1) };
	int64_t out[3];
	bool met;
	size_t n = preempt_choose(2, 1, c, 3, out, &met);

	(void)state;
	assert_true(met);
	assert_int_equal(n, 1);
	assert_int_equal(out[0], 3);
	/* Enough free: nobody. */
	n = preempt_choose(2, 2, c, 3, out, &met);
	assert_true(met);
	assert_int_equal(n, 0);
}

static void test_not_enough(void **state)
{
	struct preempt_cand c[] = { C(1, 10, 1), C(2, 20, 1) };
	int64_t out[2];
	bool met;
	size_t n = preempt_choose(4, 1, c, 2, out, &met);

	(void)state;
	assert_false(met);
	assert_int_equal(n, 0);
}

static void test_preempting_counts(void **state)
{
	/* A job already being preempted frees its GPUs: nobody more. */
	struct preempt_cand c[] = { C(1, 10, 1), C(2, 20, 1), { .id = 3, .start = 30, .gpus = 2, .preempting = true } };
	int64_t out[3];
	bool met;
	size_t n = preempt_choose(2, 0, c, 3, out, &met);

	(void)state;
	assert_true(met);
	assert_int_equal(n, 0);
	n = preempt_choose(3, 0, c, 3, out, &met);
	assert_true(met);
	assert_int_equal(n, 1);
	assert_int_equal(out[0], 2);
}

/* ---- sched_pass ---- */

static struct sched_gpu gpus4[4];

static void setup_gpus(size_t n)
{
	for (size_t i = 0; i < n; i++)
		gpus4[i] = (struct sched_gpu){ .index = (int)i, .usable = true, .total_mb = 80000 };
}

static void test_pass_preempts_newest(void **state)
{
	/* Four preemptible jobs hold the 4 GPUs; a normal 2-GPU job waits. */
	struct sched_running r[4];
	struct sched_job q[1] = { { .id = 10, .gpus = 2, .priority = 10 } };
	struct sched_decision d[1];
	int64_t v[4];
	struct sched_preempt p = { .victims = v };

	(void)state;
	setup_gpus(4);
	for (int i = 0; i < 4; i++) {
		gpus4[i].exclusive = true;
		r[i] = (struct sched_running){ .gpu_mask = 1ULL << i, .id = i + 1, .start = 100 + i, .preemptible = true };
	}
	struct sched_input in = { .jobs = q, .njobs = 1, .running = r, .nrunning = 4, .gpus = gpus4, .ngpus = 4,
				  .now = 1000, .preempt = &p };
	assert_int_equal(sched_pass(&in, d), 0);
	assert_string_equal(d[0].reason, "Resources");
	assert_int_equal(p.nvictims, 2);
	assert_int_equal(v[0], 4);
	assert_int_equal(v[1], 3);
}

static void test_pass_never_normal(void **state)
{
	/* Two normal and two preemptible jobs; a 3-GPU job cannot be helped
	 * without a normal victim: nobody is preempted. */
	struct sched_running r[4];
	struct sched_job q[1] = { { .id = 10, .gpus = 3, .priority = 10 } };
	struct sched_decision d[1];
	int64_t v[4];
	struct sched_preempt p = { .victims = v };

	(void)state;
	setup_gpus(4);
	for (int i = 0; i < 4; i++) {
		gpus4[i].exclusive = true;
		r[i] = (struct sched_running){ .gpu_mask = 1ULL << i, .id = i + 1, .start = 100 + i,
					       .preemptible = i >= 2 };
	}
	struct sched_input in = { .jobs = q, .njobs = 1, .running = r, .nrunning = 4, .gpus = gpus4, .ngpus = 4,
				  .now = 1000, .preempt = &p };
	sched_pass(&in, d);
	assert_int_equal(p.nvictims, 0);
	/* 2 GPUs: the two preemptible ones. */
	q[0].gpus = 2;
	sched_pass(&in, d);
	assert_int_equal(p.nvictims, 2);
	assert_true((v[0] == 3 && v[1] == 4) || (v[0] == 4 && v[1] == 3));
}

static void test_pass_preemptible_after_normal(void **state)
{
	/* 2 free GPUs; a preemptible job (higher priority) and a normal
	 * 2-GPU job wait: the normal one gets them. */
	struct sched_job q[2] = { { .id = 1, .gpus = 2, .priority = 200, .preemptible = true },
				  { .id = 2, .gpus = 2, .priority = 10 } };
	struct sched_decision d[2];
	int64_t v[1];
	struct sched_preempt p = { .victims = v };

	(void)state;
	setup_gpus(2);
	struct sched_input in = { .jobs = q, .njobs = 2, .gpus = gpus4, .ngpus = 2, .now = 1000, .preempt = &p };
	assert_int_equal(sched_pass(&in, d), 1);
	assert_int_equal(d[0].id, 2);
	assert_null(d[0].reason);
	assert_int_equal(d[1].id, 1);
	assert_string_equal(d[1].reason, "Resources");
}

static void test_pass_claims_free(void **state)
{
	/* 1 free GPU, 1 held by a preemptible job; a normal 2-GPU job waits
	 * for it: the free GPU is not given to a waiting preemptible job. */
	struct sched_running r[1] = { { .gpu_mask = 1, .id = 5, .start = 100, .preemptible = true } };
	struct sched_job q[2] = { { .id = 1, .gpus = 2, .priority = 10 },
				  { .id = 2, .gpus = 1, .priority = 10, .preemptible = true } };
	struct sched_decision d[2];
	int64_t v[1];
	struct sched_preempt p = { .victims = v };

	(void)state;
	setup_gpus(2);
	gpus4[0].exclusive = true;
	struct sched_input in = { .jobs = q, .njobs = 2, .running = r, .nrunning = 1, .gpus = gpus4, .ngpus = 2,
				  .now = 1000, .preempt = &p };
	assert_int_equal(sched_pass(&in, d), 0);
	assert_int_equal(p.nvictims, 1);
	assert_int_equal(v[0], 5);
	assert_string_equal(d[1].reason, "Resources");
}

static void test_pass_claims_without_victims_list(void **state)
{
	/* The same in a pass that tells nobody (preempt NULL: inside a
	 * submission's transaction): the free GPU stays claimed. */
	struct sched_running r[1] = { { .gpu_mask = 1, .id = 5, .start = 100, .preemptible = true, .preempting = true } };
	struct sched_job q[2] = { { .id = 1, .gpus = 2, .priority = 10 },
				  { .id = 2, .gpus = 1, .priority = 10, .preemptible = true } };
	struct sched_decision d[2];

	(void)state;
	setup_gpus(2);
	gpus4[0].exclusive = true;
	struct sched_input in = { .jobs = q, .njobs = 2, .running = r, .nrunning = 1, .gpus = gpus4, .ngpus = 2,
				  .now = 1000 };
	assert_int_equal(sched_pass(&in, d), 0);
	assert_string_equal(d[1].reason, "Resources");
}

static void test_pass_preempt_beyond_quota(void **state)
{
	/* The user's quota is full (max_running_gpus 0): a preemptible job
	 * runs anyway, within max_preemptible_gpus. */
	struct sched_quota quotas[1] = { { .max_jobs = -1, .max_gpus = 0, .max_preempt_gpus = 1 } };
	struct sched_job q[3] = { { .id = 1, .gpus = 1, .priority = 10, .user_quota = 1 },
				  { .id = 2, .gpus = 1, .priority = 10, .user_quota = 1, .preemptible = true },
				  { .id = 3, .gpus = 1, .priority = 10, .user_quota = 1, .preemptible = true } };
	struct sched_decision d[3];

	(void)state;
	setup_gpus(4);
	struct sched_input in = { .jobs = q, .njobs = 3, .gpus = gpus4, .ngpus = 4, .now = 1000, .quotas = quotas,
				  .nquotas = 1 };
	assert_int_equal(sched_pass(&in, d), 1);
	assert_string_equal(d[0].reason, "Quota");
	assert_null(d[1].reason);
	assert_int_equal(d[1].id, 2);
	assert_string_equal(d[2].reason, "Quota");
	assert_int_equal(d[2].limit, LIM_PREEMPT_GPUS);
}

static void test_pass_quota_blocked_no_victims(void **state)
{
	/* A normal job held by its own quota preempts nobody. */
	struct sched_quota quotas[1] = { { .max_jobs = -1, .max_gpus = 0, .max_preempt_gpus = -1 } };
	struct sched_running r[1] = { { .gpu_mask = 1, .id = 5, .start = 100, .preemptible = true } };
	struct sched_job q[1] = { { .id = 1, .gpus = 1, .priority = 10, .user_quota = 1 } };
	struct sched_decision d[1];
	int64_t v[1];
	struct sched_preempt p = { .victims = v };

	(void)state;
	setup_gpus(1);
	gpus4[0].exclusive = true;
	struct sched_input in = { .jobs = q, .njobs = 1, .running = r, .nrunning = 1, .gpus = gpus4, .ngpus = 1,
				  .now = 1000, .quotas = quotas, .nquotas = 1, .preempt = &p };
	sched_pass(&in, d);
	assert_string_equal(d[0].reason, "Quota");
	assert_int_equal(p.nvictims, 0);
}

static void test_pass_reservation_begins(void **state)
{
	/* A reservation of user 7 has begun on GPU 1, where user 8's
	 * preemptible job runs: it is preempted. */
	struct sched_running r[2] = { { .gpu_mask = 1, .id = 5, .start = 100, .uid = 8, .preemptible = true },
				      { .gpu_mask = 2, .id = 6, .start = 100, .uid = 8, .preemptible = true } };
	struct sched_resv resv[1] = { { .id = 1, .uid = 7, .gpu_mask = 2, .start = 900, .end = 2000 } };
	struct sched_decision d[1];
	int64_t v[2];
	struct sched_preempt p = { .victims = v };

	(void)state;
	setup_gpus(2);
	gpus4[0].exclusive = gpus4[1].exclusive = true;
	struct sched_input in = { .running = r, .nrunning = 2, .gpus = gpus4, .ngpus = 2, .now = 1000,
				  .resvs = resv, .nresvs = 1, .preempt = &p };
	sched_pass(&in, d);
	assert_int_equal(p.nvictims, 1);
	assert_int_equal(v[0], 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fewest),
		cmocka_unit_test(test_newest),
		cmocka_unit_test(test_not_more_than_needed),
		cmocka_unit_test(test_not_enough),
		cmocka_unit_test(test_preempting_counts),
		cmocka_unit_test(test_pass_preempts_newest),
		cmocka_unit_test(test_pass_never_normal),
		cmocka_unit_test(test_pass_preemptible_after_normal),
		cmocka_unit_test(test_pass_claims_free),
		cmocka_unit_test(test_pass_claims_without_victims_list),
		cmocka_unit_test(test_pass_preempt_beyond_quota),
		cmocka_unit_test(test_pass_quota_blocked_no_victims),
		cmocka_unit_test(test_pass_reservation_begins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
