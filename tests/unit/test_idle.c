/* test_idle.c — the idle clock of idle reclaim (core/idle.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "idle.h"

static const struct idle_rule rule = { 10, 5, 5 };

/* One sample of a 2-GPU job at t. */
static enum idle_event step2(struct idle_clock *c, double t, int u0, int u1, uint64_t m0, uint64_t m1)
{
	int util[2] = { u0, u1 };
	uint64_t mem[2] = { m0, m1 };

	return idle_step(c, &rule, &(struct idle_sample){ t, 2, util, mem });
}

static void test_warn_then_act(void **state)
{
	struct idle_clock c = { 0 };

	(void)state;
	assert_int_equal(step2(&c, 100, 0, 4, 500, 0), IDLE_NOTHING);	/* the clock starts */
	assert_true(idle_for(&c, 100) == 0);
	assert_int_equal(step2(&c, 105, 0, 4, 500, 0), IDLE_NOTHING);
	assert_true(idle_for(&c, 105) == 5);
	assert_int_equal(step2(&c, 109.9, 1, 1, 500, 0), IDLE_NOTHING);
	assert_int_equal(step2(&c, 110, 1, 1, 500, 0), IDLE_WARN);	/* after = 10 s */
	assert_int_equal(step2(&c, 112, 1, 1, 500, 0), IDLE_NOTHING);	/* once */
	assert_int_equal(step2(&c, 114.9, 1, 1, 500, 0), IDLE_NOTHING);
	assert_int_equal(step2(&c, 115, 1, 1, 500, 0), IDLE_ACT);	/* warn_before = 5 s later */
	assert_int_equal(step2(&c, 120, 1, 1, 500, 0), IDLE_NOTHING);	/* once */
	assert_true(idle_for(&c, 120) == 20);
}

static void test_activity_resets(void **state)
{
	struct idle_clock c = { 0 };

	(void)state;
	step2(&c, 100, 0, 0, 0, 0);
	assert_int_equal(step2(&c, 108, 0, 0, 0, 0), IDLE_NOTHING);
	assert_int_equal(step2(&c, 109, 0, 5, 0, 0), IDLE_NOTHING);	/* at the threshold: busy */
	assert_true(idle_for(&c, 109) == 0);
	assert_int_equal(step2(&c, 110, 0, 0, 0, 0), IDLE_NOTHING);	/* starts again */
	assert_int_equal(step2(&c, 119, 0, 0, 0, 0), IDLE_NOTHING);
	assert_int_equal(step2(&c, 120, 0, 0, 0, 0), IDLE_WARN);
	/* activity after the warning withdraws it */
	assert_int_equal(step2(&c, 121, 90, 0, 0, 0), IDLE_CLEARED);
	assert_int_equal(step2(&c, 122, 0, 0, 0, 0), IDLE_NOTHING);
	assert_int_equal(step2(&c, 131, 0, 0, 0, 0), IDLE_NOTHING);
	assert_int_equal(step2(&c, 132, 0, 0, 0, 0), IDLE_WARN);	/* a full `after` again */
	assert_int_equal(step2(&c, 137, 0, 0, 0, 0), IDLE_ACT);
}

static void test_memory_change_is_activity(void **state)
{
	struct idle_clock c = { 0 };

	(void)state;
	step2(&c, 100, 0, 0, 100, 200);
	assert_int_equal(step2(&c, 109, 0, 0, 100, 200), IDLE_NOTHING);
	assert_int_equal(step2(&c, 110, 0, 0, 100, 201), IDLE_NOTHING);	/* memory moved */
	assert_true(idle_for(&c, 110) == 0);
	assert_int_equal(step2(&c, 111, 0, 0, 100, 201), IDLE_NOTHING);
	assert_int_equal(step2(&c, 121, 0, 0, 100, 201), IDLE_WARN);
	assert_int_equal(step2(&c, 122, 0, 0, 90, 201), IDLE_CLEARED);
}

static void test_unknown_is_activity(void **state)
{
	struct idle_clock c = { 0 };
	int util[1] = { -1 };
	uint64_t mem[1] = { 0 };

	(void)state;
	for (int t = 100; t < 200; t += 5)
		assert_int_equal(idle_step(&c, &rule, &(struct idle_sample){ t, 1, util, mem }), IDLE_NOTHING);
	assert_true(idle_for(&c, 200) == 0);
	/* no GPU at all: never idle */
	for (int t = 200; t < 300; t += 5)
		assert_int_equal(idle_step(&c, &rule, &(struct idle_sample){ t, 0, util, mem }), IDLE_NOTHING);
	assert_true(idle_for(&c, 300) == 0);
}

static void test_busy_never_warned(void **state)
{
	struct idle_clock c = { 0 };

	(void)state;
	for (int t = 0; t < 1000; t++)
		assert_int_equal(step2(&c, 100 + t, t % 2 ? 0 : 50, 0, 10, 10), IDLE_NOTHING);
}

static void test_format(void **state)
{
	char b[32];

	(void)state;
	idle_fmt_hms(6300, b, sizeof b);
	assert_string_equal(b, "1:45:00");
	idle_fmt_hm(6300, b, sizeof b);
	assert_string_equal(b, "1:45");
	idle_fmt_hms(3.9, b, sizeof b);
	assert_string_equal(b, "0:00:03");
	idle_fmt_hm(-5, b, sizeof b);
	assert_string_equal(b, "0:00");
	idle_fmt_hms(100 * 3600 + 61, b, sizeof b);
	assert_string_equal(b, "100:01:01");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warn_then_act),
		cmocka_unit_test(test_activity_resets),
		cmocka_unit_test(test_memory_change_is_activity),
		cmocka_unit_test(test_unknown_is_activity),
		cmocka_unit_test(test_busy_never_warned),
		cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
