/* test_table.c — the job table's submit-time index (state/table.c):
 * jobs_since_from never skips a job submitted at or after the time asked,
 * also when submit times do not follow ids (a clock set back), and skips
 * whole blocks of older jobs when they do. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "server.h"

/* A table of n jobs whose submit times are t[id]. */
static struct server *table(const double *t, int64_t n)
{
	struct server *s = calloc(1, sizeof *s);

	assert_non_null(s);
	for (int64_t id = 1; id <= n; id++) {
		struct job *j = job_new();

		j->id = id;
		j->state = JS_FINISHED;
		j->submit_time = t[id];
		jobs_add(s, j);
	}
	return s;
}

static void table_free(struct server *s)
{
	for (int64_t id = 1; id <= s->max_id; id++)
		job_free(s->jobs[id]);
	free(s->jobs);
	free(s->open);
	free(s->since_max);
	free(s);
}

/* A walk of the jobs submitted at or after since, as GET /jobs and GET
 * /stats make it: every such job is visited; returns how many ids were. */
static int64_t walk(struct server *s, const double *t, double since)
{
	int64_t seen = 0, found = 0, want = 0;

	for (int64_t id = 1; id <= s->max_id; id++)
		want += t[id] >= since;
	for (int64_t id = jobs_since_next(s, since, 1); id <= s->max_id; id++) {
		if (id % JOBS_SINCE_BLOCK == 0 && (id = jobs_since_next(s, since, id)) > s->max_id)
			break;
		seen++;
		found += t[id] >= since;
	}
	assert_int_equal(found, want);
	return seen;
}

/* Submit times 1001, 1002, …: ids grow with time. */
static double *ordered_times(int64_t n)
{
	double *t = calloc((size_t)n + 1, sizeof *t);

	assert_non_null(t);
	for (int64_t id = 1; id <= n; id++)
		t[id] = 1000.0 + (double)id;
	return t;
}

static void test_since_skips_older_blocks(void **state)
{
	int64_t n = 10 * JOBS_SINCE_BLOCK;
	double *t = ordered_times(n);
	struct server *s;

	(void)state;
	s = table(t, n);
	/* the last 100 jobs: the walk enters the last blocks only, not job 1 */
	assert_true(walk(s, t, t[n - 100]) <= 2 * JOBS_SINCE_BLOCK);
	assert_int_equal(jobs_since_next(s, 0, 1), 1);
	assert_int_equal(walk(s, t, 0), n);
	assert_int_equal(jobs_since_next(s, 1e12, 1), n + 1);
	assert_int_equal(walk(s, t, 1e12), 0);
	for (int64_t id = 1; id <= n; id += 97)
		walk(s, t, t[id]);
	table_free(s);
	free(t);
}

static void test_since_clock_set_back(void **state)
{
	int64_t n = 6 * JOBS_SINCE_BLOCK;
	double *t = ordered_times(n);
	struct server *s;

	(void)state;
	/* a job of block 1 submitted "later" than those of blocks 2-4 */
	t[JOBS_SINCE_BLOCK + 5] = 1000.0 + 5 * JOBS_SINCE_BLOCK;
	s = table(t, n);
	assert_true(jobs_since_next(s, 1000.0 + 4 * JOBS_SINCE_BLOCK, 1) <= JOBS_SINCE_BLOCK + 5);
	/* its block is entered, those between are not */
	assert_true(walk(s, t, 1000.0 + 5 * JOBS_SINCE_BLOCK) <= 3 * JOBS_SINCE_BLOCK);
	for (int64_t id = 1; id <= n; id += 31)
		walk(s, t, t[id]);
	table_free(s);
	free(t);
}

/* The first job the newest (the benchmark's million-job store had its
 * template there): one block more is entered, not the whole table (the
 * bound was a running maximum, and the walk started at job 1). */
static void test_since_one_late_job_costs_one_block(void **state)
{
	int64_t n = 40 * JOBS_SINCE_BLOCK;
	double *t = ordered_times(n);
	struct server *s;

	(void)state;
	t[1] = 1e9;
	s = table(t, n);
	assert_true(walk(s, t, t[n - 10]) <= 2 * JOBS_SINCE_BLOCK);
	table_free(s);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_since_skips_older_blocks),
		cmocka_unit_test(test_since_clock_set_back),
		cmocka_unit_test(test_since_one_late_job_costs_one_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
