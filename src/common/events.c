/* events.c — notification event names and the per-job lists of gbatch
 * --notify-on / --notify-email (see events.h). */
#include "events.h"

#include <string.h>

const char *const gf_events[] = {
	"job_submitted", "job_updated", "job_started", "job_completed", "job_failed",
	"job_cancelled", "job_timeout", "job_held", "job_released", "job_gpu_memory_exceeded",
	"job_idle",
	"gpu_available", "reservation_created", "reservation_cancelled", "scheduler_online",
	NULL,
};

static const char default_job_events[] = "job_completed,job_failed,job_timeout,job_cancelled";

static bool known_n(const char *name, size_t n, bool job_only)
{
	for (size_t i = 0; gf_events[i] && (!job_only || i < GF_JOB_EVENTS); i++)
		if (strlen(gf_events[i]) == n && !strncmp(gf_events[i], name, n))
			return true;
	return false;
}

bool gf_event_known(const char *name, bool job_only)
{
	return known_n(name, strlen(name), job_only);
}

int gf_events_check_list(const char *list, struct gf_err *e)
{
	const char *p = list;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (n == 0)
			return gf_err_set(e, "invalid notification events '%.200s': an event name is empty "
					     "(expected a comma list such as job_failed,job_timeout)", list);
		if (!known_n(p, n, true)) {
			if (known_n(p, n, false))
				return gf_err_set(e, "'%.*s' is not about one job: per-job mail takes %s", (int)n,
						  p, "job_submitted, job_updated, job_started, job_completed, "
						     "job_failed, job_cancelled, job_timeout, job_held, job_released, "
						     "job_gpu_memory_exceeded, job_idle");
			return gf_err_set(e, "unknown notification event '%.*s' (known: job_submitted, "
					     "job_updated, job_started, job_completed, job_failed, job_cancelled, "
					     "job_timeout, job_held, job_released, job_gpu_memory_exceeded, job_idle)",
					     (int)(n > 100 ? 100 : n), p);
		}
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

bool gf_events_list_has(const char *list, const char *event)
{
	size_t len = strlen(event);
	const char *p = list ? list : default_job_events;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, event, n))
			return true;
		if (!p[n])
			return false;
		p += n + 1;
	}
}

int gf_mail_check_list(const char *list, struct gf_err *e)
{
	const char *p = list;

	for (;;) {
		size_t n = strcspn(p, ","), at = 0, i;

		for (i = 0; i < n; i++) {
			unsigned char c = (unsigned char)p[i];

			if (c <= ' ' || c == 0x7f || strchr("<>\"(),;:\\[]", c))
				break;
			if (c == '@')
				at++;
		}
		if (n == 0 || i < n || at != 1 || p[0] == '@' || p[n - 1] == '@')
			return gf_err_set(e, "invalid email address '%.*s' (expected name@host)",
					  (int)(n > 200 ? 200 : n), p);
		if (!p[n])
			return 0;
		p += n + 1;
	}
}
