/* txn.c — store transactions and their undo log. Every change to jobs runs
 * in one (jobs_txn_begin … jobs_txn_commit), and memory follows the store:
 * a job is snapshotted (a copy of its stored fields) before it is changed in place
 * inside a transaction, and gets its snapshot back when the store refuses
 * the change; jobs the transaction added go away, and the job table, the
 * open list and the cascade queue are as they were when it began. */
#include "txn.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* A job changed inside the open transaction. */
struct undo {
	int64_t id;
	struct job *before;	/* its stored fields (job_clone); NULL: added by this transaction */
	int64_t retried_by;
	bool replaced;		/* its fields were edited (jobs_replace) */
};

static int txn_begin(struct server *s, bool sync_later, struct gf_err *e)
{
	if (s->txn.open)
		return gf_err_set(e, "internal error: a store transaction is already open");
	if (sync_later ? store_begin_sync_later(s->store, e) : store_begin(s->store, e))
		return -1;
	s->txn.open = true;
	s->txn.failed = false;
	/* A job keeps the low 32 bits of the sequence number (job.h): when they
	 * come round to 0, no job may be taken for one touched since. */
	if ((uint32_t)++s->txn.seq == 0) {
		for (int64_t id = 0; id < s->njobs_cap; id++)
			if (s->jobs[id])
				s->jobs[id]->txn_seq = 0;
		s->txn.seq++;
	}
	s->txn.nundo = 0;
	s->txn.max_id = s->max_id;
	s->txn.nopen = s->nopen;
	cascade_mark(s);
	return 0;
}

int jobs_txn_begin(struct server *s, struct gf_err *e)
{
	return txn_begin(s, false, e);
}

int jobs_txn_begin_sync_later(struct server *s, struct gf_err *e)
{
	return txn_begin(s, true, e);
}

void jobs_txn_sync(struct server *s)
{
	store_sync_or_stop(s->store);
}

static void undo_push(struct server *s, int64_t id, struct job *before, int64_t retried_by)
{
	s->txn.undo = gf_grow(s->txn.undo, &s->txn.undo_cap, s->txn.nundo + 1, sizeof *s->txn.undo, 64);
	s->txn.undo[s->txn.nundo++] = (struct undo){ .id = id, .before = before, .retried_by = retried_by };
}

struct job *jobs_txn_added_at(struct server *s, size_t i)
{
	return i < s->txn.nundo && !s->txn.undo[i].before ? s->jobs[s->txn.undo[i].id] : NULL;
}

void jobs_touch(struct server *s, struct job *j)
{
	if (!s->txn.open || j->txn_seq == (uint32_t)s->txn.seq)
		return;
	j->txn_seq = (uint32_t)s->txn.seq;
	undo_push(s, j->id, job_clone(j), jr(j)->retried_by);
}

/* The store refused something: the transaction can only be rolled back. */
static int txn_fail(struct server *s, struct gf_err *e)
{
	if (s->txn.open && !s->txn.failed) {
		s->txn.failed = true;
		if (e)
			s->txn.err = *e;
		else
			gf_err_set(&s->txn.err, "the store refused a change");
	}
	return -1;
}

/* j takes n's stored fields and keeps its own runtime ones; n is freed. */
static void adopt(struct job *j, struct job *n)
{
	struct job old = *j;

	*j = *n;
	j->id = old.id;
	j->rt = old.rt;
	j->dependents = old.dependents;
	j->txn_seq = old.txn_seq;
	j->unreadable = old.unreadable;
	j->in_live = old.in_live;
	*n = old;
	n->rt = NULL;
	n->dependents = NULL;
	job_free(n);
}

int jobs_save(struct server *s, struct job *j, struct gf_err *e)
{
	struct gf_err mine;

	if (!e)
		e = &mine;
	if (s->txn.open && s->txn.failed) {
		*e = s->txn.err;
		return -1;
	}
	/* Changed in place without a snapshot, it could not be put back. */
	assert(!s->txn.open || j->txn_seq == (uint32_t)s->txn.seq);
	if (j->unreadable) {
		gf_err_set(e, "job %lld is an unreadable record: it is kept as found in the store",
			   (long long)j->id);
		return txn_fail(s, e);
	}
	if (store_update_job(s->store, j, e))
		return txn_fail(s, e);
	return 0;
}

int jobs_insert(struct server *s, struct job *j, struct gf_err *e)
{
	assert(s->txn.open);
	if (s->txn.failed) {
		if (e)
			*e = s->txn.err;
		job_free(j);
		return -1;
	}
	if (store_insert_job(s->store, j, e) < 0) {
		job_free(j);
		return txn_fail(s, e);
	}
	job_share_strings(j);
	job_more_trim(j);
	j->txn_seq = (uint32_t)s->txn.seq;
	undo_push(s, j->id, NULL, 0);
	jobs_add(s, j);
	cascade_index_deps(s, j);
	return 0;
}

int jobs_replace(struct server *s, struct job *j, struct job *n, struct gf_err *e)
{
	bool same_deps = j->ndeps == n->ndeps &&
			 (!n->ndeps || !memcmp(j->deps, n->deps, n->ndeps * sizeof *n->deps));

	jobs_touch(s, j);
	for (size_t i = s->txn.nundo; i-- > 0;)
		if (s->txn.undo[i].id == j->id) {
			s->txn.undo[i].replaced = true;
			break;
		}
	job_more_trim(n);
	adopt(j, n);
	if (!same_deps)
		cascade_index_deps(s, j);
	return jobs_save(s, j, e);
}

static void txn_end(struct server *s)
{
	for (size_t i = 0; i < s->txn.nundo; i++)
		job_free(s->txn.undo[i].before);
	free(s->txn.undo);
	s->txn.undo = NULL;
	s->txn.nundo = s->txn.undo_cap = 0;
	s->txn.open = false;
}

/* Memory as it was when the transaction began. */
static void restore(struct server *s)
{
	for (size_t i = s->txn.nundo; i-- > 0;) {
		struct undo *u = &s->txn.undo[i];
		struct job *j = s->jobs[u->id];

		if (!u->before) {
			s->jobs[u->id] = NULL;
			job_free(j);
			continue;
		}
		adopt(j, u->before);
		u->before = NULL;
		if (jr(j)->retried_by != u->retried_by)
			jr_w(j)->retried_by = u->retried_by;
	}
	s->max_id = s->txn.max_id;
	s->nopen = s->txn.nopen;
	cascade_rollback(s);
	txn_end(s);
}

int jobs_txn_commit(struct server *s, struct gf_err *e)
{
	if (!s->txn.open)
		return gf_err_set(e, "internal error: no store transaction is open");
	if (s->txn.failed) {
		if (e)
			*e = s->txn.err;
		jobs_txn_rollback(s);
		return -1;
	}
	if (store_commit(s->store, e)) {
		restore(s);	/* store_commit rolled the store back */
		return -1;
	}
	if (!s->txn.nundo)
		s->commits++;	/* quotas, reservations, GPUs: what a pass reads too */
	for (size_t i = 0; i < s->txn.nundo; i++)
		jobs_committed(s, s->jobs[s->txn.undo[i].id], s->txn.undo[i].before);
	/* What changed, told up (notifications: after the commit, so a change
	 * the store refused is never announced). */
	for (size_t i = 0; i < s->txn.nundo; i++) {
		struct undo *u = &s->txn.undo[i];
		struct job *j = s->jobs[u->id];
		struct gf_ev_job_changed ev = { j, u->before ? (int)u->before->state : -1, u->replaced };

		if (!j)
			continue;
		hooks_fire(s, GF_EV_JOB_CHANGED, &ev);
		if (!u->before && j->state == JS_RUNNING) {	/* submitted and started at once */
			ev = (struct gf_ev_job_changed){ j, JS_QUEUED, false };
			hooks_fire(s, GF_EV_JOB_CHANGED, &ev);
		}
	}
	txn_end(s);
	return 0;
}

void jobs_txn_rollback(struct server *s)
{
	if (!s->txn.open)
		return;
	store_rollback(s->store);
	restore(s);
}
