/* history.c — what the dashboard plots: a ring of samples of the machine
 * (GPUs in use, jobs queued, running, held) taken every interval over the
 * last 24 hours, kept in the store so it survives restarts and bounded in
 * memory; and GET /history, which adds each user's GPU-hours per day over
 * the last 7 days, counted from the job table. */
#include "observe.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPAN_SECS 86400.0		/* the ring covers this much */
#define DAYS 7				/* GPU-hours: this many 24-hour buckets */
#define DEFAULT_INTERVAL 60

static void ring_push(struct server *s, const struct store_sample *x)
{
	struct history *h = &s->history;

	if (h->n == h->cap) {		/* full: the oldest goes */
		h->head = (h->head + 1) % h->cap;
		h->n--;
	}
	h->ring[(h->head + h->n) % h->cap] = *x;
	h->n++;
}

static void on_loaded(void *arg, const struct store_sample *x)
{
	ring_push(arg, x);
}

static void take_sample(struct server *s, struct store_sample *x)
{
	memset(x, 0, sizeof *x);
	x->t = now_real();
	gpustate_refresh(s);
	for (size_t g = 0; g < s->nviews; g++) {
		x->gpus_total++;
		if (s->views[g].exclusive || s->views[g].nshared)
			x->gpus_used++;
	}
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);

		if (!j)
			continue;
		x->queued += j->state == JS_QUEUED;
		x->running += j->state == JS_RUNNING;
		x->held += j->state == JS_HOLD;
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	struct history *h = &s->history;
	struct timeval tv = { .tv_sec = h->interval };
	struct store_sample x;
	struct gf_err e;

	(void)fd;
	(void)what;
	take_sample(s, &x);
	/* Memory follows the store: a sample the store refused is not kept. */
	if (store_add_sample(s->store, &x, x.t - SPAN_SECS, &e)) {
		if (!h->failing)
			fprintf(stderr, "gflowd: history: %s (the dashboard's plots miss this time)\n", e.msg);
		h->failing = true;
	} else {
		h->failing = false;
		ring_push(s, &x);
	}
	evtimer_add(h->ev, &tv);
}

int history_init(struct server *s, struct gf_err *e)
{
	struct history *h = &s->history;
	const char *env = getenv("GFLOW_HISTORY_SECS");	/* tests: a shorter interval */
	struct timeval first = { .tv_sec = 2 };
	char *end;

	h->interval = DEFAULT_INTERVAL;
	if (env && *env) {
		long v = strtol(env, &end, 10);

		if (*end || v < 1 || v > 3600)
			return gf_err_set(e, "GFLOW_HISTORY_SECS '%s': expected whole seconds from 1 to 3600", env);
		h->interval = (int)v;
	}
	h->cap = (size_t)(SPAN_SECS / h->interval) + 2;
	h->ring = calloc(h->cap, sizeof *h->ring);
	if (!h->ring)
		abort();
	if (store_each_sample(s->store, now_real() - SPAN_SECS, on_loaded, s, e))
		return gf_err_prefix(e, "loading the history");
	h->ev = evtimer_new(s->base, on_tick, s);
	if (h->interval < first.tv_sec)
		first.tv_sec = h->interval;
	evtimer_add(h->ev, &first);	/* soon after start, then every interval */
	return 0;
}

void history_close(struct server *s)
{
	if (s->history.ev)
		event_free(s->history.ev);
	free(s->history.ring);
	memset(&s->history, 0, sizeof s->history);
}

/* ---- GET /history --------------------------------------------------------- */

struct user_hours {
	const char *user;
	double hours[DAYS];
};

static void gpu_hours(struct server *s, double now, json_t *out)
{
	double from = now - DAYS * 86400.0;
	struct user_hours *u = NULL;
	size_t nu = 0, cap = 0;

	for (int64_t id = 1; id <= s->max_id; id++) {
		const struct job *j = s->jobs[id];
		double a, b;
		size_t k;

		if (!j || j->gpus <= 0 || j->start_time <= 0)
			continue;
		a = j->start_time;
		b = j->end_time > 0 ? j->end_time : job_state_ended(j->state) ? a : now;
		if (b <= from || b <= a)
			continue;
		for (k = 0; k < nu && strcmp(u[k].user, j->user ? j->user : ""); k++)
			;
		if (k == nu) {
			if (nu == cap && !(u = realloc(u, (cap = cap ? cap * 2 : 16) * sizeof *u)))
				abort();
			memset(&u[nu], 0, sizeof u[nu]);
			u[nu++].user = j->user ? j->user : "";
		}
		for (int d = 0; d < DAYS; d++) {
			double lo = from + d * 86400.0, hi = lo + 86400.0;
			double x = (b < hi ? b : hi) - (a > lo ? a : lo);

			if (x > 0)
				u[k].hours[d] += x * j->gpus / 3600.0;
		}
	}
	for (size_t k = 0; k < nu; k++) {
		json_t *a = json_array();

		for (int d = 0; d < DAYS; d++)
			json_array_append_new(a, json_real(u[k].hours[d]));
		json_object_set_new(out, u[k].user, a);
	}
	free(u);
}

json_t *history_json(struct server *s)
{
	struct history *h = &s->history;
	json_t *samples = json_array(), *users = json_object();
	double now = now_real();

	for (size_t i = 0; i < h->n; i++) {
		const struct store_sample *x = &h->ring[(h->head + i) % h->cap];

		if (x->t < now - SPAN_SECS)
			continue;
		json_array_append_new(samples, json_pack("[f,I,I,I,I,I]", x->t, (json_int_t)x->gpus_used,
							 (json_int_t)x->gpus_total, (json_int_t)x->queued,
							 (json_int_t)x->running, (json_int_t)x->held));
	}
	gpu_hours(s, now, users);
	return json_pack("{s:f,s:i,s:f,s:[s,s,s,s,s,s],s:o,s:{s:f,s:i,s:o}}", "now", now, "interval_secs", h->interval,
		      "span_secs", SPAN_SECS, "columns", "t", "gpus_used", "gpus_total", "queued", "running", "held",
		      "samples", samples, "gpu_hours", "from", now - DAYS * 86400.0, "days", DAYS, "users", users);
}
