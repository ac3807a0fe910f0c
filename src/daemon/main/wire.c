/* wire.c — who hears which event (state/hooks.h): the one table of
 * subscribers, registered when the daemon starts. Each entry names the
 * layer above that acts on what a layer below saw. */
#include "main.h"

#include <stdio.h>

#include "wire.h"

static int on_job_changed(struct server *s, void *arg)
{
	const struct gf_ev_job_changed *ev = arg;

	if (s->notify)	/* else every commit would work out an event for nobody */
		notify_job_change(s, ev->job, ev->before_state, ev->updated);
	return 0;
}

static int on_job_event(struct server *s, void *arg)
{
	const struct gf_ev_job_event *ev = arg;

	notify_job_event(s, ev->job, ev->event);
	return 0;
}

static int on_gpus(struct server *s, void *arg)
{
	(void)arg;
	notify_gpus(s);
	return 0;
}

static int on_runner_ended(struct server *s, void *arg)
{
	const struct gf_ev_runner_ended *ev = arg;

	return jobs_end_later(s, ev->job, ev->result, ev->why);
}

static int on_job_freed(struct server *s, void *arg)
{
	jobs_freed(s, arg);
	return 0;
}

static int on_cancel(struct server *s, void *arg)
{
	struct gf_ev_cancel *ev = arg;
	struct gf_err e;

	if (jobs_cancel_many(s, &ev->id, 1, ev->reason, NULL, NULL, &e) == 0)
		return 0;
	snprintf(ev->err, ev->errsize, "%s", e.msg);
	return -1;
}

static int on_spare_taken(struct server *s, void *arg)
{
	(void)arg;
	standby_want_spares(s);
	return 0;
}

static int on_reservation(struct server *s, void *arg)
{
	const struct gf_ev_reservation *ev = arg;

	notify_reservation(s, ev->event, ev->owner, ev->json);
	return 0;
}

static const struct gf_hook_entry wire_table[] = {
	{ GF_EV_JOB_CHANGED, on_job_changed },		/* observe: notifications */
	{ GF_EV_JOB_EVENT, on_job_event },		/* observe */
	{ GF_EV_GPUS, on_gpus },			/* observe */
	{ GF_EV_RESERVATION, on_reservation },		/* observe */
	{ GF_EV_RUNNER_ENDED, on_runner_ended },	/* engine: the job's end */
	{ GF_EV_JOB_FREED, on_job_freed },		/* engine: its resources back */
	{ GF_EV_CANCEL, on_cancel },			/* engine */
	{ GF_EV_SPARE_TAKEN, on_spare_taken },		/* run: the standby makes spares again */
};

void wire_hooks(struct server *s)
{
	hooks_on(s, wire_table, sizeof wire_table / sizeof wire_table[0]);
}
