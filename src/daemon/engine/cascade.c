/* cascade.c — working through the cascade queue (its data: state/deps.c).
 * A job that ended badly queues the jobs that wait for it; those whose
 * dependencies can no longer be met are cancelled, and queue their own in
 * turn. The queue is worked through in slices of at most CASCADE_SLICE,
 * each its own transaction, so that no loop turn is long whatever its size;
 * a cancel is answered when its part is through. A crash between slices
 * loses nothing: the pass cancels queued jobs whose dependencies can no
 * longer be met. */
#include "engine.h"

#include "deps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* Work on a cascade for at most this long per loop turn (seconds); its
 * commit takes about as long again. */
#define CASCADE_SLICE 0.01
/* After the store refused a slice, try again this much later (seconds). */
#define CASCADE_RETRY_SECS 1

/* Work through the queue inside the open transaction: cancel each job whose
 * dependencies can no longer be met, and queue its own dependents. Stops
 * when the queue is empty, the store refused a write, or CASCADE_SLICE has
 * passed. */
void cascade_work(struct server *s)
{
	double until = now_mono() + CASCADE_SLICE;
	size_t n = 0;

	while (s->cq_head < s->cq_len && !s->txn.failed) {
		struct cascade_item it = s->cq[s->cq_head++];
		struct job *c = jobs_get(s, it.id);
		int64_t culprit = 0;
		char reason[64];
		struct gf_err e;

		if (it.origin)
			it.origin->left--;
		if (c && cascade_may_cancel(c) && jobs_deps_state(s, c, &culprit) == -1) {
			snprintf(reason, sizeof reason, "DependencyFailed:%lld",
				 (long long)(it.parent && cascade_lists(c, it.parent) ? it.parent : culprit));
			jobs_touch(s, c);
			jobs_end_now(c, JS_CANCELLED, reason);
			if (jobs_save(s, c, &e) == 0)
				cascade_push_dependents(s, c, it.origin);
		}
		if (++n % 8 == 0 && now_mono() > until)
			break;
	}
}

static void on_cascade(evutil_socket_t fd, short what, void *arg);

/* Go on with the queue in a later loop turn (after `secs`), at the lowest
 * priority: a turn with requests to serve serves them first. */
static void arm_cascade(struct server *s, int secs)
{
	struct timeval tv = { secs, 0 };

	if (!s->base)
		return;
	if (!s->cq_ev) {
		s->cq_ev = evtimer_new(s->base, on_cascade, s);
		if (!s->cq_ev)
			abort();
		event_priority_set(s->cq_ev, 2);
	}
	if (!evtimer_pending(s->cq_ev, NULL))
		evtimer_add(s->cq_ev, &tv);
}

/* Answer the requests whose cascade is through; with err, also the others
 * (their part of the queue stays, and is tried again later). */
static void finish_waiters(struct server *s, const char *err)
{
	struct cascade_wait **pp = &s->cwaits;

	while (*pp) {
		struct cascade_wait *w = *pp;

		if (w->left && !err) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		for (size_t i = s->cq_head; w->left && i < s->cq_len; i++)
			if (s->cq[i].origin == w)
				s->cq[i].origin = NULL;
		w->done(s, w->arg, w->left ? err : NULL);
		free(w);
	}
}

/* After a commit: answer who can be, and go on with the queue next turn,
 * or let it go when it is empty. */
void cascade_after(struct server *s)
{
	finish_waiters(s, NULL);
	s->cq_failing = false;
	if (s->cq_head < s->cq_len) {
		arm_cascade(s, 0);
		return;
	}
	free(s->cq);
	s->cq = NULL;
	s->cq_head = s->cq_len = s->cq_cap = 0;
}

void jobs_close(struct server *s)
{
	finish_waiters(s, "gflowd is stopping: the rest of the cascade is finished when it starts again");
	if (s->cq_ev)
		event_free(s->cq_ev);
	s->cq_ev = NULL;
	free(s->cq);
	s->cq = NULL;
	s->cq_head = s->cq_len = s->cq_cap = 0;
	free(s->txn.undo);
	s->txn.undo = NULL;
}

/* The store refused a slice: answer the waiting requests, try again later. */
static void cascade_failed(struct server *s, const char *msg)
{
	if (!s->cq_failing)
		fprintf(stderr, "gflowd: cancelling jobs whose dependencies failed: %s (trying again)\n", msg);
	s->cq_failing = true;
	finish_waiters(s, msg);
	arm_cascade(s, CASCADE_RETRY_SECS);
}

/* One slice of the queue, its own transaction. */
void cascade_slice(struct server *s)
{
	struct gf_err e;

	if (jobs_txn_begin(s, &e) == 0) {
		cascade_work(s);
		if (jobs_txn_commit(s, &e) == 0) {
			cascade_after(s);
			return;
		}
	}
	cascade_failed(s, e.msg);
}

static void on_cascade(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	(void)fd;
	(void)what;
	if (s->cq_head < s->cq_len) {
		cascade_slice(s);
		if (s->cq_head == s->cq_len)
			server_schedule(s);	/* the pass checks what the queue left */
	} else
		cascade_after(s);
}
