/* ctlnotify.c — `gctl notify test [--event E]`: the daemon sends one test
 * notification to each configured target and says what became of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "events.h"
#include "http.h"

#define PROG "gctl"
#define USAGE "usage: gctl notify test [--event EVENT]"

int ctl_notify(int argc, char **argv)
{
	const char *event = NULL;
	struct gf_err e;
	json_t *body, *answer, *r;
	size_t i;
	int failed = 0;

	if (argc < 2 || strcmp(argv[1], "test") != 0)
		return cmd_usagef(PROG, argc < 2 ? "missing subcommand (%s)" : "unknown notify subcommand (%s)",
		    USAGE);
	for (i = 2; i < (size_t)argc; i++) {
		if (strcmp(argv[i], "--event") == 0 && i + 1 < (size_t)argc)
			event = argv[++i];
		else if (strncmp(argv[i], "--event=", 8) == 0)
			event = argv[i] + 8;
		else
			return cmd_usagef(PROG, "unexpected '%s' (%s)", argv[i], USAGE);
	}
	if (event && !gf_event_known(event, false))
		return cmd_usagef(PROG, "unknown event '%s' (events: job_submitted, job_updated, job_started, "
		    "job_completed, job_failed, job_cancelled, job_timeout, job_held, job_released, "
		    "job_gpu_memory_exceeded, job_idle, "
		    "gpu_available, reservation_created, reservation_cancelled, scheduler_online)", event);
	body = json_object();
	if (event)
		json_object_set_new(body, "event", json_string(event));
	answer = api_post("/notify/test", body, &e);
	json_decref(body);
	if (!answer)
		return cmd_fail(PROG, &e);
	printf("test event %s:\n", json_string_value(json_object_get(answer, "event")));
	json_array_foreach(json_object_get(answer, "results"), i, r) {
		const char *res = json_string_value(json_object_get(r, "result"));

		printf("  %s (%s): %s, %s\n", json_string_value(json_object_get(r, "target")),
		    json_string_value(json_object_get(r, "where")), res,
		    json_string_value(json_object_get(r, "detail")));
		failed += res && strcmp(res, "failed") == 0;
	}
	json_decref(answer);
	return failed ? EXIT_FAIL : EXIT_OK;
}
