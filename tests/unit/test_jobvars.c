/* test_jobvars.c — gflow's job variables expanded in argv words. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "jobvars.h"

static char *const env[] = { "PATH=/bin", "GFLOW_ARRAY_TASK_ID=7", "GFLOW_JOB_ID=42", "GFLOW_JOB_NAME=a $b ${c}",
			     "GFLOW_GPU_IDS=0,2", "HOME=/h", NULL };

static void expect(const char *word, const char *want)
{
	char *out;

	assert_int_equal(gf_jobvars_expand(word, env, &out), 0);
	if (!want) {
		assert_null(out);
		return;
	}
	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_plain_and_braced(void **state)
{
	(void)state;
	expect("$GFLOW_ARRAY_TASK_ID", "7");
	expect("${GFLOW_ARRAY_TASK_ID}", "7");
	expect("--i=$GFLOW_ARRAY_TASK_ID", "--i=7");
	expect("out_${GFLOW_ARRAY_TASK_ID}_x.txt", "out_7_x.txt");
	expect("$GFLOW_JOB_ID-$GFLOW_ARRAY_TASK_ID/$GFLOW_GPU_IDS", "42-7/0,2");
	expect("$GFLOW_ARRAY_TASK_ID.log", "7.log");
}

static void test_nothing_else(void **state)
{
	(void)state;
	expect("plain", NULL);
	expect("", NULL);
	expect("$HOME", NULL);
	expect("${HOME}", NULL);
	expect("$PATH:$GFLOW_JOB_ID", "$PATH:42");
	/* a longer name is another variable, as in a shell */
	expect("$GFLOW_ARRAY_TASK_IDX", NULL);
	expect("$GFLOW_ARRAY_TASK_ID_x", NULL);
	/* unclosed brace, lone dollar, escapes are left alone */
	expect("${GFLOW_JOB_ID", NULL);
	expect("$", NULL);
	expect("$$", NULL);
	expect("$(GFLOW_JOB_ID)", NULL);
	expect("`echo $GFLOW_JOB_IDs`", NULL);
}

static void test_free_text_never_substituted(void **state)
{
	(void)state;
	/* the name is free text: it reaches the job only through its
	 * environment, never into a word a shell may read */
	expect("[$GFLOW_JOB_NAME]", NULL);
	expect("${GFLOW_JOB_NAME}", NULL);
	expect("$GFLOW_JOB_ID:$GFLOW_JOB_NAME", "42:$GFLOW_JOB_NAME");
}

static void test_only_digits_and_commas(void **state)
{
	static char *const odd[] = { "GFLOW_JOB_ID=1$(touch x)", "GFLOW_GPU_IDS=0,1", "GFLOW_ARRAY_TASK_ID=-1",
				     "GFLOW_GPU_MEMORY_MB=it's", NULL };
	char *out;

	(void)state;
	/* a value with anything but digits and commas stays a reference */
	assert_int_equal(gf_jobvars_expand("a $GFLOW_JOB_ID b", odd, &out), 0);
	assert_null(out);
	assert_int_equal(gf_jobvars_expand("$GFLOW_GPU_MEMORY_MB/$GFLOW_ARRAY_TASK_ID/$GFLOW_GPU_IDS", odd, &out), 0);
	assert_non_null(out);
	assert_string_equal(out, "$GFLOW_GPU_MEMORY_MB/$GFLOW_ARRAY_TASK_ID/0,1");
	free(out);
}

static void test_unset_is_empty(void **state)
{
	(void)state;
	expect("m=$GFLOW_GPU_MEMORY_MB.", "m=.");
	char *out;

	assert_int_equal(gf_jobvars_expand("$GFLOW_JOB_ID", NULL, &out), 0);
	assert_string_equal(out, "");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_and_braced),
		cmocka_unit_test(test_nothing_else),
		cmocka_unit_test(test_free_text_never_substituted),
		cmocka_unit_test(test_only_digits_and_commas),
		cmocka_unit_test(test_unset_is_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
