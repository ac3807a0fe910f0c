/* test_notifymsg.c — the text of notifications (notifymsg.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "notifymsg.h"

static void test_payload(void **state)
{
	json_t *p = notify_payload("gpu-server-01", "job_completed", "job", json_pack("{s:i}", "id", 42));
	const char *ts = json_string_value(json_object_get(p, "timestamp"));

	(void)state;
	assert_string_equal(json_string_value(json_object_get(p, "event")), "job_completed");
	assert_int_equal(strlen(ts), 20);
	assert_true(ts[4] == '-' && ts[10] == 'T' && ts[19] == 'Z');
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "job"), "id")), 42);
	assert_string_equal(json_string_value(json_object_get(json_object_get(p, "scheduler"), "host")),
			    "gpu-server-01");
	assert_non_null(json_object_get(json_object_get(p, "scheduler"), "version"));
	json_decref(p);
	p = notify_payload("h", "scheduler_online", NULL, NULL);
	assert_int_equal(json_object_size(p), 3);
	json_decref(p);
}

static void test_mail(void **state)
{
	char *to[] = { "ops@example.com", "Équipe <team@example.com>" };
	struct gf_email m = { .from = "gflow <noreply@example.com>", .subject_prefix = "[prod]" };
	json_t *p = notify_payload("h1", "job_failed", "job",
				   json_pack("{s:i,s:s,s:s,s:s}", "id", 7, "name", "训练", "state", "Failed",
					     "reason", "line\nbreak"));
	char *text = notify_mail("h1", 3, &m, to, 2, "job_failed", p);
	char *body = strstr(text, "\r\n\r\n");

	(void)state;
	assert_non_null(body);
	*body = '\0';
	/* headers: ASCII only, the subject and a display name encoded */
	for (const char *c = text; *c; c++)
		assert_true((unsigned char)*c < 0x80);
	assert_non_null(strstr(text, "From: gflow <noreply@example.com>\r\n"));
	assert_non_null(strstr(text, "To: ops@example.com,\r\n =?UTF-8?B?w4lxdWlwZQ==?= <team@example.com>\r\n"));
	assert_non_null(strstr(text, "Subject: =?UTF-8?B?"));
	assert_non_null(strstr(text, "@h1>\r\n"));
	body += 4;
	assert_non_null(strstr(body, "gflow on h1: job 7 (训练): failed\r\n"));
	assert_non_null(strstr(body, "event: job_failed\r\n"));
	assert_non_null(strstr(body, "line?break"));	/* no bare line feeds */
	free(text);
	json_decref(p);
}

static void test_ascii_subject(void **state)
{
	char *to[] = { "a@b.c" };
	struct gf_email m = { .from = "a@b.c" };
	json_t *p = notify_payload("h", "gpu_available", "gpu", json_pack("{s:i}", "index", 3));
	char *text = notify_mail("h", 1, &m, to, 1, "gpu_available", p);

	(void)state;
	assert_non_null(strstr(text, "Subject: gflow on h: GPU 3 is available\r\n"));
	free(text);
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_payload),
		cmocka_unit_test(test_mail),
		cmocka_unit_test(test_ascii_subject),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
