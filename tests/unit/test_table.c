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

/* Every job below the id jobs_since_from gives was submitted before t. */
static void check_bound(struct server *s, const double *t, double since)
{
	int64_t from = jobs_since_from(s, since);

	assert_true(from >= 1);
	for (int64_t id = 1; id < from && id <= s->max_id; id++)
		assert_true(t[id] < since);
}

static void test_since_skips_older_blocks(void **state)
{
	int64_t n = 10 * JOBS_SINCE_BLOCK;
	double *t = calloc((size_t)n + 1, sizeof *t);
	struct server *s;

	(void)state;
	for (int64_t id = 1; id <= n; id++)
		t[id] = 1000.0 + (double)id;
	s = table(t, n);
	/* the last 100 jobs: the walk starts in the last block, not at job 1 */
	assert_true(jobs_since_from(s, t[n - 100]) >= 9 * JOBS_SINCE_BLOCK);
	assert_int_equal(jobs_since_from(s, 0), 1);
	assert_true(jobs_since_from(s, 1e12) > n - JOBS_SINCE_BLOCK);
	for (int64_t id = 1; id <= n; id += 97)
		check_bound(s, t, t[id]);
	table_free(s);
	free(t);
}

static void test_since_clock_set_back(void **state)
{
	int64_t n = 6 * JOBS_SINCE_BLOCK;
	double *t = calloc((size_t)n + 1, sizeof *t);
	struct server *s;

	(void)state;
	for (int64_t id = 1; id <= n; id++)
		t[id] = 1000.0 + (double)id;
	/* a job of block 1 submitted "later" than those of blocks 2-4 */
	t[JOBS_SINCE_BLOCK + 5] = 1000.0 + 5 * JOBS_SINCE_BLOCK;
	s = table(t, n);
	assert_true(jobs_since_from(s, 1000.0 + 4 * JOBS_SINCE_BLOCK) <= JOBS_SINCE_BLOCK + 5);
	for (int64_t id = 1; id <= n; id += 31)
		check_bound(s, t, t[id]);
	table_free(s);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_since_skips_older_blocks),
		cmocka_unit_test(test_since_clock_set_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
