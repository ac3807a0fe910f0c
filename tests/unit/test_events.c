/* test_events.c — notification event names and per-job lists (events.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "events.h"

static void test_known(void **state)
{
	(void)state;
	assert_true(gf_event_known("job_failed", true));
	assert_true(gf_event_known("scheduler_online", false));
	assert_false(gf_event_known("scheduler_online", true));
	assert_false(gf_event_known("job_fail", false));
	assert_false(gf_event_known("", false));
	assert_string_equal(gf_events[GF_JOB_EVENTS - 1], "job_idle");
	assert_string_equal(gf_events[GF_JOB_EVENTS], "gpu_available");
}

static void test_check_list(void **state)
{
	struct gf_err e = { "" };

	(void)state;
	assert_int_equal(gf_events_check_list("job_failed", &e), 0);
	assert_int_equal(gf_events_check_list("job_started,job_completed,job_held", &e), 0);
	assert_int_equal(gf_events_check_list("job_failed,,job_timeout", &e), -1);
	assert_non_null(strstr(e.msg, "empty"));
	assert_int_equal(gf_events_check_list("job_failed,", &e), -1);
	assert_int_equal(gf_events_check_list("job_done", &e), -1);
	assert_non_null(strstr(e.msg, "unknown notification event 'job_done'"));
	assert_int_equal(gf_events_check_list("job_failed,gpu_available", &e), -1);
	assert_non_null(strstr(e.msg, "'gpu_available' is not about one job"));
}

static void test_list_has(void **state)
{
	(void)state;
	/* NULL: the documented defaults */
	assert_true(gf_events_list_has(NULL, "job_completed"));
	assert_true(gf_events_list_has(NULL, "job_cancelled"));
	assert_false(gf_events_list_has(NULL, "job_started"));
	assert_true(gf_events_list_has("job_started,job_held", "job_held"));
	assert_false(gf_events_list_has("job_started,job_held", "job_hel"));
	assert_false(gf_events_list_has("job_started_x", "job_started"));
}

static void test_mail_list(void **state)
{
	struct gf_err e = { "" };

	(void)state;
	assert_int_equal(gf_mail_check_list("a@b.org", &e), 0);
	assert_int_equal(gf_mail_check_list("a@b.org,c.d+x@e.f", &e), 0);
	assert_int_equal(gf_mail_check_list("nobody", &e), -1);
	assert_non_null(strstr(e.msg, "invalid email address 'nobody'"));
	assert_int_equal(gf_mail_check_list("a@b@c", &e), -1);
	assert_int_equal(gf_mail_check_list("@b", &e), -1);
	assert_int_equal(gf_mail_check_list("a@", &e), -1);
	assert_int_equal(gf_mail_check_list("a b@c", &e), -1);
	assert_int_equal(gf_mail_check_list("a@b\r\nRCPT TO:<x@y>", &e), -1);
	assert_int_equal(gf_mail_check_list("<a@b>", &e), -1);
	assert_int_equal(gf_mail_check_list("a@b,", &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known),
		cmocka_unit_test(test_check_list),
		cmocka_unit_test(test_list_has),
		cmocka_unit_test(test_mail_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
