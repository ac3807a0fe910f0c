/* cascade.c — dependency cascades: the dependents index (each job keeps the
 * ids of the jobs that list it in depends_on) and the cascade queue. A job
 * that ended badly queues the jobs that wait for it; those whose
 * dependencies can no longer be met are cancelled, and queue their own in
 * turn. The queue is worked through in slices of at most CASCADE_SLICE,
 * each its own transaction, so that no loop turn is long whatever its size;
 * a cancel is answered when its part is through. A crash between slices
 * loses nothing: the pass cancels queued jobs whose dependencies can no
 * longer be met. Also the walks over the index that say what a cancel
 * would take with it and what an end took with it. */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* Work on a cascade for at most this long per loop turn (seconds); its
 * commit takes about as long again. */
#define CASCADE_SLICE 0.01
/* After the store refused a slice, try again this much later (seconds). */
#define CASCADE_RETRY_SECS 1

/* A job to check: cancel it if its dependencies can no longer be met. */
struct cascade_item {
	int64_t id;
	int64_t parent;			/* the parent that ended, 0 when not known */
	struct cascade_wait *origin;	/* the request waiting for it, or NULL */
};

/* A request waiting for the cascade it started to be worked through. */
struct cascade_wait {
	size_t left;			/* its items still in the queue */
	uint64_t txn_seq;		/* the transaction that made it */
	jobs_done_cb done;
	void *arg;
	struct cascade_wait *next;
};

/* ---- the dependents index --------------------------------------------- */

/* Does c list parent in its depends_on? */
bool cascade_lists(const struct job *c, int64_t parent)
{
	for (size_t k = 0; k < c->ndeps; k++)
		if (c->deps[k] == parent)
			return true;
	return false;
}

void cascade_add_dependent(struct job *p, int64_t id)
{
	struct job_ids *d = p->dependents;

	if (d && d->n && d->id[d->n - 1] == id)
		return;
	if (!d || d->n == d->cap) {
		uint32_t cap = d ? d->cap * 2 : 4;

		if (cap < 4 || !(d = realloc(d, sizeof *d + cap * sizeof *d->id)))
			abort();
		if (!p->dependents)
			d->n = 0;
		d->cap = cap;
		p->dependents = d;
	}
	d->id[d->n++] = id;
}

/* List c under each of its parents. Entries are never removed (a rollback
 * or an edit may leave some that no longer hold): readers check
 * cascade_lists(). */
void cascade_index_deps(struct server *s, const struct job *c)
{
	for (size_t k = 0; k < c->ndeps; k++) {
		struct job *p = jobs_get(s, c->deps[k]);

		if (p)
			cascade_add_dependent(p, c->id);
	}
}

/* A set of job ids, one bit each. */
uint8_t *idset_new(struct server *s)
{
	uint8_t *v = calloc((size_t)s->max_id / 8 + 1, 1);

	if (!v)
		abort();
	return v;
}

/* Adds id; false when it was there already (or is not a job id). */
bool idset_add(struct server *s, uint8_t *v, int64_t id)
{
	if (id <= 0 || id > s->max_id || (v[id / 8] & (1u << (id % 8))))
		return false;
	v[id / 8] |= (uint8_t)(1u << (id % 8));
	return true;
}

static bool idset_has(struct server *s, const uint8_t *v, int64_t id)
{
	return id > 0 && id <= s->max_id && (v[id / 8] & (1u << (id % 8)));
}

void idvec_add(struct idvec *l, int64_t id)
{
	l->v = gf_grow(l->v, &l->cap, l->n + 1, sizeof *l->v, 64);
	l->v[l->n++] = id;
}

/* Append the list to (*out, *nout) and free it. */
static void idvec_move(struct idvec *l, int64_t **out, size_t *nout)
{
	if (l->n) {
		*out = realloc(*out, (*nout + l->n) * sizeof **out);
		if (!*out)
			abort();
		memcpy(*out + *nout, l->v, l->n * sizeof *l->v);
		*nout += l->n;
	}
	free(l->v);
}

/* ---- cascades --------------------------------------------------------- */

/* A request that waits for the cascade of the open transaction; dropped,
 * its done never called, when that transaction is rolled back. */
struct cascade_wait *cascade_wait_new(struct server *s, jobs_done_cb done, void *arg)
{
	struct cascade_wait *w;

	if (!(w = calloc(1, sizeof *w)))
		abort();
	*w = (struct cascade_wait){ .txn_seq = s->txn.seq, .done = done, .arg = arg, .next = s->cwaits };
	s->cwaits = w;
	return w;
}

void cascade_push(struct server *s, int64_t id, int64_t parent, struct cascade_wait *origin)
{
	s->cq = gf_grow(s->cq, &s->cq_cap, s->cq_len + 1, sizeof *s->cq, 256);
	s->cq[s->cq_len++] = (struct cascade_item){ .id = id, .parent = parent, .origin = origin };
	if (origin)
		origin->left++;
}

bool cascade_may_cancel(const struct job *c)
{
	return (c->state == JS_QUEUED || c->state == JS_HOLD) && c->auto_cancel && c->ndeps;
}

/* p ended badly: queue the jobs that wait for it. */
void cascade_push_dependents(struct server *s, const struct job *p, struct cascade_wait *origin)
{
	for (size_t i = 0; i < job_ndependents(p); i++) {
		struct job *c = jobs_get(s, p->dependents->id[i]);

		if (c && cascade_may_cancel(c) && cascade_lists(c, p->id))
			cascade_push(s, c->id, p->id, origin);
	}
}

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

/* The transaction was rolled back, the queue is as it was when it began:
 * requests that came with the transaction go; the others wait for what is
 * in the queue again. */
void cascade_rollback(struct server *s)
{
	struct cascade_wait **pp;

	for (pp = &s->cwaits; *pp;) {
		struct cascade_wait *w = *pp;

		if (w->txn_seq == s->txn.seq) {
			*pp = w->next;
			free(w);
		} else {
			w->left = 0;
			pp = &w->next;
		}
	}
	for (size_t i = s->cq_head; i < s->cq_len; i++)
		if (s->cq[i].origin)
			s->cq[i].origin->left++;
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

void jobs_failed_because(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout)
{
	uint8_t *seen = idset_new(s);
	struct idvec found = { 0 };

	for (size_t i = 0; i < n; i++)
		idset_add(s, seen, ids[i]);
	/* Breadth first: the roots, then what was found, in order. */
	for (size_t i = 0; i < n + found.n; i++) {
		struct job *p = jobs_get(s, i < n ? ids[i] : found.v[i - n]);

		for (size_t k = 0; p && k < job_ndependents(p); k++) {
			struct job *c = jobs_get(s, p->dependents->id[k]);
			char *end;

			if (c && c->state == JS_CANCELLED && c->reason &&
			    !strncmp(c->reason, "DependencyFailed:", 17) &&
			    strtoll(c->reason + 17, &end, 10) == p->id && !*end && cascade_lists(c, p->id) &&
			    idset_add(s, seen, c->id))
				idvec_add(&found, c->id);
		}
	}
	idvec_move(&found, out, nout);
	free(seen);
}

/* Would c be cancelled when the jobs in `gone` are? */
static bool would_fail(struct server *s, const struct job *c, const uint8_t *gone)
{
	if (!c->dep_any)
		return true;	/* it lists one of them */
	for (size_t k = 0; k < c->ndeps; k++) {
		struct job *p = jobs_get(s, c->deps[k]);

		if (!idset_has(s, gone, c->deps[k]) && p && (!job_state_ended(p->state) || p->state == JS_FINISHED))
			return false;
	}
	return true;
}

void jobs_would_cascade(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout)
{
	uint8_t *gone = idset_new(s);
	struct idvec found = { 0 };

	for (size_t i = 0; i < n; i++)
		idset_add(s, gone, ids[i]);
	for (size_t i = 0; i < n + found.n; i++) {
		struct job *p = jobs_get(s, i < n ? ids[i] : found.v[i - n]);

		for (size_t k = 0; p && k < job_ndependents(p); k++) {
			struct job *c = jobs_get(s, p->dependents->id[k]);

			if (c && cascade_may_cancel(c) && !idset_has(s, gone, c->id) && cascade_lists(c, p->id) &&
			    would_fail(s, c, gone)) {
				idset_add(s, gone, c->id);
				idvec_add(&found, c->id);
			}
		}
	}
	idvec_move(&found, out, nout);
	free(gone);
}
