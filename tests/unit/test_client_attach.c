/* test_client_attach.c — `gjob attach`'s keys: Ctrl-b d detaches, Ctrl-b
 * Ctrl-b is one Ctrl-b, any other key after Ctrl-b goes through with it,
 * also when the two arrive in different reads. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "attach.h"

static size_t filter(const char *in, int *prefix, char *out, int *detach)
{
	size_t n = attach_filter_keys((const unsigned char *)in, strlen(in), prefix, (unsigned char *)out, detach);

	out[n] = '\0';
	return n;
}

static void test_plain_keys_pass(void **state)
{
	char out[64];
	int prefix = 0, detach = -1;

	(void)state;
	assert_int_equal(filter("ls -l\r", &prefix, out, &detach), 6);
	assert_string_equal(out, "ls -l\r");
	assert_int_equal(detach, 0);
	assert_int_equal(prefix, 0);
}

static void test_ctrl_b_d_detaches_and_drops_the_rest(void **state)
{
	char out[64];
	int prefix = 0, detach = 0;

	(void)state;
	assert_int_equal(filter("ab\002dcd", &prefix, out, &detach), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(detach, 1);
}

static void test_ctrl_b_across_reads(void **state)
{
	char out[64];
	int prefix = 0, detach = 0;

	(void)state;
	assert_int_equal(filter("x\002", &prefix, out, &detach), 1);
	assert_int_equal(prefix, 1);
	assert_int_equal(detach, 0);
	filter("d", &prefix, out, &detach);
	assert_int_equal(detach, 1);
	assert_string_equal(out, "");
}

static void test_ctrl_b_twice_is_one_and_other_keys_go_through(void **state)
{
	char out[64];
	int prefix = 0, detach = 0;

	(void)state;
	filter("\002\002", &prefix, out, &detach);
	assert_string_equal(out, "\002");
	assert_int_equal(prefix, 0);
	filter("\002c", &prefix, out, &detach);
	assert_string_equal(out, "\002c");
	filter("\002", &prefix, out, &detach);
	assert_string_equal(out, "");
	filter("D", &prefix, out, &detach);	/* only a small d detaches */
	assert_string_equal(out, "\002D");
	assert_int_equal(detach, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_keys_pass),
		cmocka_unit_test(test_ctrl_b_d_detaches_and_drops_the_rest),
		cmocka_unit_test(test_ctrl_b_across_reads),
		cmocka_unit_test(test_ctrl_b_twice_is_one_and_other_keys_go_through),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
