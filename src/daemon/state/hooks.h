/* hooks.h — what travels up the layers: events on a fixed enum.
 *
 * A lower layer that must tell a higher one something (a job changed, a
 * runner reported, the GPUs changed) fires an event; the layer above
 * subscribed to it at start, from one static table (main/wire.c). Firing is
 * synchronous: the subscribers run before hooks_fire returns, in the order
 * of the table, so the order of what happens is that of a direct call. */
#ifndef GF_HOOKS_H
#define GF_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct server;
struct job;
struct job_result;

enum gf_event {
	GF_EV_JOB_CHANGED,	/* after a commit (txn.c): struct gf_ev_job_changed */
	GF_EV_JOB_EVENT,	/* a job's named event no state change tells (usage.c): struct gf_ev_job_event */
	GF_EV_GPUS,		/* the GPU views were recomputed (gpustate.c): NULL */
	GF_EV_RUNNER_ENDED,	/* a runner reported or vanished (reap.c): struct gf_ev_runner_ended;
				 * nonzero: the store refused the end, memory as before */
	GF_EV_JOB_FREED,	/* an ended job's last process is gone (reap.c, backstop.c): the struct job */
	GF_EV_CANCEL,		/* cancel a running job (usage.c): struct gf_ev_cancel; nonzero: not done */
	GF_EV_REQUEUE,		/* stop a running job and queue it again, as a preemption does
				 * (idle.c): struct gf_ev_cancel; nonzero: not done */
	GF_EV_SPARE_TAKEN,	/* a spare run directory or log was used (rundir.c): NULL */
	GF_EV_RESERVATION,	/* a reservation made or cancelled (reserve.c): struct gf_ev_reservation */
	GF_EV_COUNT
};

struct gf_ev_job_changed {
	const struct job *job;
	int before_state;	/* -1: the job is new */
	bool updated;		/* its fields were edited */
};

struct gf_ev_job_event {
	const struct job *job;
	const char *event;
};

struct gf_ev_runner_ended {
	struct job *job;
	const struct job_result *result;	/* NULL: no result (why says why) */
	const char *why;
};

struct gf_ev_cancel {
	int64_t id;
	const char *reason;
	char *err;		/* why not, when it was not done */
	size_t errsize;
};

struct gf_ev_reservation {
	const char *event;	/* "reservation_created", "reservation_cancelled" */
	const char *owner;
	void *json;		/* json_t *, borrowed */
};

/* A subscriber: 0, or nonzero for "not done" (hooks_fire stops there). */
typedef int (*gf_hook_fn)(struct server *s, void *arg);

struct gf_hook_entry {
	enum gf_event ev;
	gf_hook_fn fn;
};

#define GF_HOOKS_PER_EVENT 4

/* The subscribers, in struct server (s->hooks). */
struct hooks {
	gf_hook_fn fn[GF_EV_COUNT][GF_HOOKS_PER_EVENT];
	unsigned char n[GF_EV_COUNT];
};

/* Subscribe the table's entries, in its order (at start; aborts when an
 * event has more than GF_HOOKS_PER_EVENT subscribers: a programming error). */
void hooks_on(struct server *s, const struct gf_hook_entry *table, size_t n);
/* Run ev's subscribers; the first nonzero answer, or 0. */
int hooks_fire(struct server *s, enum gf_event ev, void *arg);

/* A scheduler pass is wanted: the loop runs one in its next turn (its timer,
 * s->sched_ev, made by main/loop.c). Not an event: the pass is the loop's
 * own timer, armed here, so a wish costs no call up. */
void server_schedule(struct server *s);

#endif
