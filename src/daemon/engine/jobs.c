/* jobs.c — the job table and the state machine: loading, every transition
 * of a job (submit-time checks, cancel, hold, release, end, retry) and its
 * dependencies. The scheduler pass that turns decisions into started jobs,
 * and records the ends queued here with them, is pass.c's.
 *
 * Each transition runs in a transaction (txn.c) and is written to the
 * store before it is acted on. A job that ends badly hands the jobs that
 * depend on it to the cascade queue (cascade.c). */
#include "engine.h"

#include "grow.h"
#include "verbose.h"

#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define UNREADABLE_REASON "SystemError: unreadable record"

/* ---- loading ----------------------------------------------------------- */

/* The stand-in for a store row that could not be read: an ended job that
 * every client can show, keeping the id taken. It is never written back,
 * so the row stays as it was found, for inspection. What the row still
 * tells (owner, name, command) is kept, so that its owner sees it. */
static struct job *stand_in(struct server *s, int64_t id, json_t *row)
{
	struct job *j = job_new();
	char user[256];
	struct gf_err e;
	json_t *v;

	j->id = id;
	j->unreadable = true;
	j->state = JS_FAILED;
	job_set_reason(j, UNREADABLE_REASON);
	v = json_object_get(row, "uid");
	j->uid = json_is_integer(v) ? (uid_t)json_integer_value(v) : s->uid;
	v = json_object_get(row, "user");
	job_set_str(&j->user, json_is_string(v) ? json_string_value(v) : job_user_name(j->uid, user, sizeof user));
	v = json_object_get(row, "name");
	job_set_str(&j->name, json_is_string(v) ? json_string_value(v) : "(unreadable)");
	v = json_object_get(row, "cwd");
	job_set_str(&j->cwd, json_is_string(v) ? json_string_value(v) : "/");
	v = json_object_get(row, "submit_time");
	j->submit_time = json_is_number(v) ? json_number_value(v) : 0;
	j->argv = json_is_array(json_object_get(row, "command"))
			  ? strv_from_json(json_object_get(row, "command"), &e, "command")
			  : NULL;
	if (!j->argv && !(j->argv = calloc(1, sizeof *j->argv)))
		abort();
	return j;
}

static int load_one(void *arg, int64_t id, const char *text, size_t len, const void *scanned)
{
	struct server *s = arg;
	struct gf_err e;
	struct job *j = job_from_scan(scanned);
	json_error_t jerr;
	json_t *row;

	(void)len;	/* text is NUL-ended */
	if (j) {
		j->id = id;
		return jobs_add(s, j);
	}
	/* A row the quick reader does not take: the long way, with its words. */
	row = json_loads(text, 0, &jerr);
	j = row ? job_from_json(row, &e) : NULL;
	if (!j) {
		/* One bad row must not keep every other job down. */
		if (!row)
			gf_err_set(&e, "not JSON (%s)", jerr.text);
		fprintf(stderr, "gflowd: job %lld: unreadable record in %s (%s): left as it is, shown as Failed "
				"(%s)\n", (long long)id, s->paths.db, e.msg, UNREADABLE_REASON);
		j = stand_in(s, id, row);
	}
	json_decref(row);
	j->id = id;
	return jobs_add(s, j);
}

/* The largest job id that a file in dir is named for ("<id>.log",
 * "<id>.<run>"); 0 when none. */
static int64_t largest_id_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int64_t max = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		long long id;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		errno = 0;
		id = strtoll(de->d_name, &end, 10);
		if (!errno && *end == '.' && id > max)
			max = id;
	}
	closedir(d);
	return max;
}

int jobs_load(struct server *s, struct gf_err *e)
{
	int64_t seq, on_disk;

	if (store_load_jobs(s->store, job_row_scan, job_row_scan_size(), load_one, s, e))
		return -1;
	for (int64_t i = 1; i <= s->max_id; i++) {
		struct job *j = s->jobs[i], *prev;

		if (!j)
			continue;
		if (jm(j)->retry_of && (prev = jobs_get(s, jm(j)->retry_of)))
			jr_w(prev)->retried_by = j->id;
		cascade_index_deps(s, j);
		jobs_live_note(s, j);
	}
	s->deps_dirty = true;
	/* A store that was emptied or replaced must not hand out ids whose
	 * logs or run directories are still there. */
	seq = store_max_job_id(s->store);
	on_disk = largest_id_in(s->paths.log_dir);
	if (largest_id_in(s->paths.run_dir) > on_disk)
		on_disk = largest_id_in(s->paths.run_dir);
	if (on_disk > seq && on_disk > s->max_id) {
		if (store_raise_job_id(s->store, on_disk, e))
			return gf_err_prefix(e, "numbering new jobs past %lld (found in %s)", (long long)on_disk,
					     s->paths.data_dir);
		fprintf(stderr, "gflowd: the store knows jobs up to %lld, but %s has files of jobs up to %lld: "
				"new jobs are numbered from %lld\n", (long long)seq, s->paths.data_dir,
			(long long)on_disk, (long long)on_disk + 1);
		seq = on_disk;
	}
	if (seq > s->max_id) {
		jobs_reserve_ids(s, seq);
		s->max_id = seq;
	}
	malloc_trim(0);	/* what reading the rows took and gave back */
	return 0;
}

/* ---- user transitions -------------------------------------------------- */

int jobs_cancel_many(struct server *s, const int64_t *ids, size_t n, const char *reason, jobs_done_cb done,
		     void *arg, struct gf_err *e)
{
	struct cascade_wait *w = NULL;
	struct idvec mine = { 0 };

	if (jobs_txn_begin(s, e))
		return -1;
	if (done)
		w = cascade_wait_new(s, done, arg);
	for (size_t i = 0; i < n && !s->txn.failed; i++) {
		struct job *j = jobs_get(s, ids[i]);

		if (!j || job_state_ended(j->state))
			continue;	/* ended already, or named twice */
		jobs_touch(s, j);
		j->state = JS_CANCELLED;
		job_set_reason(j, reason);
		if (!j->active)
			j->end_time = now_real();
		idvec_add(&mine, j->id);
		if (jobs_save(s, j, e) == 0)
			cascade_push_dependents(s, j, w);
	}
	/* A small cascade is recorded with them; a big one goes on in later
	 * loop turns. One commit for the request, however many jobs it touched. */
	cascade_work(s);
	if (jobs_txn_commit(s, e)) {
		free(mine.v);
		return -1;
	}
	/* Their resources stay booked until each runner reports that every
	 * process is gone. */
	for (size_t i = 0; i < mine.n; i++) {
		struct job *j = jobs_get(s, mine.v[i]);

		if (j->active)
			reap_signal(s, j, SIGTERM);
	}
	free(mine.v);
	cascade_after(s);
	server_schedule(s);
	return 0;
}

int jobs_hold(struct server *s, struct job *j, struct gf_err *e)
{
	if (j->state == JS_HOLD)
		return 0;
	if (j->state != JS_QUEUED)
		return gf_err_set(e, "job %lld is %s: only queued jobs can be held", (long long)j->id,
				  job_state_name(j->state));
	jobs_touch(s, j);
	j->state = JS_HOLD;
	job_set_reason(j, "JobHeldUser");
	if (jobs_save(s, j, e))
		return -1;
	server_schedule(s);
	return 0;
}

int jobs_release(struct server *s, struct job *j, double at, struct gf_err *e)
{
	if (j->state != JS_HOLD && !(j->state == JS_QUEUED && at > 0))
		return gf_err_set(e, "job %lld is %s: only held jobs can be released", (long long)j->id,
				  job_state_name(j->state));
	jobs_touch(s, j);
	j->state = JS_QUEUED;
	if (at > 0)
		jm_w(j)->begin_at = at;
	job_set_reason(j, NULL);
	if (jobs_save(s, j, e))
		return -1;
	server_schedule(s);
	return 0;
}

int jobs_check_feasible(struct server *s, const struct job *j, struct gf_err *e)
{
	size_t ngpus = gpustate_count(s);

	if (j->gpus > 0 && ngpus == 0) {
		const char *why = s->have_snap && !s->snap.nvml_ok ? s->snap.status : "NVML reports no GPUs";

		return gf_err_set(e, "this machine has no usable GPUs (%s): a job asking for --gpus %d "
				     "could never run", why, j->gpus);
	}
	if ((size_t)j->gpus > ngpus)
		return gf_err_set(e, "--gpus %d: this machine has only %zu GPU%s", j->gpus, ngpus,
				  ngpus == 1 ? "" : "s");
	if (s->mem_total_mb && j->memory_mb > s->mem_total_mb)
		return gf_err_set(e, "--memory %lldM: this machine has only %lldM of RAM",
				  (long long)j->memory_mb, (long long)s->mem_total_mb);
	if (s->cpus_total && job_cpus(j) > s->cpus_total)
		return gf_err_set(e, "--cpus %d: this machine has only %d CPU%s for jobs ([daemon] cpus)", job_cpus(j),
				  s->cpus_total, s->cpus_total == 1 ? "" : "s");
	if (j->shared && j->gpus > 0) {
		uint64_t biggest = 0;

		for (size_t i = 0; i < s->snap.ndev; i++)
			if (s->snap.devs[i].total_mb > biggest)
				biggest = s->snap.devs[i].total_mb;
		if ((uint64_t)jm(j)->gpu_memory_mb > biggest)
			return gf_err_set(e, "--gpu-memory %lldM: the largest GPU has %lluM",
					  (long long)jm(j)->gpu_memory_mb, (unsigned long long)biggest);
	}
	return 0;
}

/* ---- ends and retries -------------------------------------------------- */

static struct job *make_retry(struct server *s, struct job *old, struct gf_err *e)
{
	json_t *o = job_to_json(old, NULL);
	struct job *n = job_from_json(o, e);

	json_decref(o);
	if (!n)
		return NULL;
	n->state = JS_QUEUED;
	job_set_reason(n, NULL);
	n->attempt = old->attempt + 1;
	jm_w(n)->retry_of = old->id;
	jm_w(n)->log_seq = 0;	/* a job of its own: its log is named when it starts */
	jm_w(n)->requeues = 0;
	jm_w(n)->preempt_since = 0;
	jm_w(n)->preempt &= ~(int64_t)PJ_END_CANCEL;
	n->submit_time = now_real();
	n->start_time = n->end_time = 0;
	n->has_exit = false;
	n->exit_code = n->exit_signal = 0;
	n->gpu_mask = 0;
	if (jm(n)->cpu_ids)
		job_set_str(&jm_w(n)->cpu_ids, NULL);
	usage_clear(n);
	n->memory_enforced = -1;
	n->active = false;
	n->runner_pid = 0;
	n->runner_ticks = 0;
	n->run_seq = 0;
	job_set_str(&n->tmux_session, NULL);
	job_set_str(&n->tmux_socket, NULL);
	return jobs_insert(s, n, e) ? NULL : n;
}

/* Queued dependents of `old` now wait for `neu` instead. */
static int move_dependents(struct server *s, struct job *old, struct job *neu, struct gf_err *e)
{
	for (size_t i = 0; i < job_ndependents(old); i++) {
		struct job *c = jobs_get(s, old->dependents->id[i]);

		if (!c || (c->state != JS_QUEUED && c->state != JS_HOLD) || !cascade_lists(c, old->id))
			continue;
		jobs_touch(s, c);
		for (size_t k = 0; k < c->ndeps; k++)
			if (c->deps[k] == old->id)
				c->deps[k] = neu->id;
		cascade_add_dependent(neu, c->id);
		if (jobs_save(s, c, e))
			return -1;
	}
	return 0;
}

static void apply_result(struct job *j, const struct job_result *r, const char *why)
{
	bool cancelled = j->state == JS_CANCELLED;
	char reason[300];

	j->end_time = r && r->end > 0 ? r->end : now_real();
	if (!r) {
		snprintf(reason, sizeof reason, "SystemError:%s", why);
		jobs_end_now(j, cancelled ? JS_CANCELLED : JS_FAILED, cancelled ? j->reason : reason);
		return;
	}
	if (r->start > 0)
		j->start_time = r->start;
	j->has_exit = true;
	j->exit_code = r->exited ? r->exit_code : 0;
	j->exit_signal = r->exited ? 0 : r->signal;
	j->memory_enforced = j->memory_mb ? r->memory_enforced : -1;
	if (cancelled)
		return;	/* state and reason were recorded when it was cancelled */
	if (!strcmp(r->ended_by, "timeout")) {
		/* The daemon's backstop says why it had to enforce the limit. */
		snprintf(reason, sizeof reason, "SystemError:%s", r->error);
		j->state = JS_TIMEOUT;
		job_set_reason(j, r->error[0] ? reason : NULL);
	} else if (!strcmp(r->ended_by, "cancel")) {
		j->state = JS_CANCELLED;
		job_set_reason(j, "CancelledByUser");
	} else if (r->oom) {
		j->state = JS_FAILED;
		job_set_reason(j, "OutOfMemory:Host");
	} else if (!strcmp(r->ended_by, "error")) {
		snprintf(reason, sizeof reason, "SystemError:%s", r->error[0] ? r->error : "job did not start");
		j->state = JS_FAILED;
		job_set_reason(j, reason);
	} else if (r->exited && r->exit_code == 0) {
		j->state = JS_FINISHED;
		job_set_reason(j, NULL);
	} else {
		j->state = JS_FAILED;
		job_set_reason(j, NULL);
	}
}

/* The end of j into the open transaction: its state, a retry, the
 * dependents to cancel, its usage. -1: the transaction failed. */
static int end_in_txn(struct server *s, struct job *j, const struct job_result *r, const char *why,
		      struct gf_err *e)
{
	struct job *retry;
	bool requeued = false;

	jobs_touch(s, j);
	/* A job whose processes are still being killed keeps what it holds. */
	j->active = jr(j)->draining;
	if (j->state == JS_RUNNING && jm(j)->preempt_since > 0)
		preempt_ended(s, j, r);	/* queued again, or cancelled */
	else if (j->state == JS_QUEUED || j->state == JS_HOLD)
		requeued = true;	/* requeued already: its last run's end, reported again (a restart) */
	else {
		if (jm(j)->preempt_since > 0)
			jm_w(j)->preempt_since = 0;	/* cancelled meanwhile: that stands */
		apply_result(j, r, why);
		failure_classify(s, j, r);
	}
	if (j->state == JS_QUEUED || j->state == JS_HOLD)
		;	/* requeued: its dependents wait on */
	else if (j->state == JS_FAILED && j->attempt < j->max_retries) {
		retry = make_retry(s, j, e);
		if (!retry || move_dependents(s, j, retry, e))
			return -1;
		jr_w(j)->retried_by = retry->id;
	} else if (j->state != JS_FINISHED)
		cascade_push_dependents(s, j, NULL);
	return jobs_save(s, j, e) || (!requeued && usage_stage(s, j, e)) ? -1 : 0;
}

/* After the commit of j's end. */
static void end_after(struct server *s, struct job *j)
{
	gf_trace("end_commit", j->id);	/* the hand-off trace (trace.h) */
	vlog(1, "job %lld ended: %s%s%s", (long long)j->id, job_state_name(j->state), j->reason ? ", " : "",
	     j->reason ? j->reason : "");
	if (!jr(j)->draining)
		reap_forget(s, j);
}

int jobs_ended(struct server *s, struct job *j, const struct job_result *r, const char *why)
{
	struct gf_err e;

	/* One transaction: if the store refuses it, j is as it was. */
	if (jobs_txn_begin(s, &e) || end_in_txn(s, j, r, why, &e))
		goto fail;
	cascade_work(s);
	if (jobs_txn_commit(s, &e))
		goto fail;
	usage_commit(s);	/* fair share: its run counts from now on */
	cascade_after(s);
	end_after(s, j);
	server_schedule(s);
	return 0;
fail:
	/* The runner's result file stays; the caller tries again later. */
	fprintf(stderr, "gflowd: recording the end of job %lld: %s\n", (long long)j->id, e.msg);
	jobs_txn_rollback(s);
	usage_drop(s);
	server_schedule(s);
	return -1;
}

/* ---- ends recorded together ----------------------------------------------
 *
 * A runner that ends is not recorded at once: its end waits for the next
 * pass (the same loop turn's, or the next), which records every end that
 * came meanwhile and what they make room to start in one transaction, one
 * sync of the store for all of them. Until that commit the job is shown
 * Running and holds its GPUs (a job's end is committed before it is shown
 * or its GPUs are used again); its result file stays until then, so a stop
 * or crash in between loses nothing (the next daemon reads it). */
int jobs_end_later(struct server *s, struct job *j, const struct job_result *r, const char *why)
{
	struct queued_end *q;

	if (jr(j)->end_queued)
		return 0;	/* told twice (a watch and the backstop): the first stands */
	s->ends = gf_grow(s->ends, &s->ends_cap, s->nends + 1, sizeof *s->ends, 16);
	q = &s->ends[s->nends];
	*q = (struct queued_end){ .id = j->id, .run_seq = j->run_seq, .has_result = r != NULL };
	if (r)
		q->result = *r;
	if (why && !(q->why = strdup(why)))
		abort();
	s->nends++;
	jr_w(j)->end_queued = true;
	server_schedule(s);
	return 0;
}

static struct job *queued_job(struct server *s, const struct queued_end *q)
{
	struct job *j = jobs_get(s, q->id);

	return j && j->run_seq == q->run_seq && jr(j)->end_queued ? j : NULL;
}

static void ends_clear(struct server *s)
{
	for (size_t i = 0; i < s->nends; i++) {
		struct job *j = queued_job(s, &s->ends[i]);

		if (j) {
			jr_w(j)->end_queued = false;
			job_rt_trim(j);
		}
		free(s->ends[i].why);
	}
	s->nends = 0;
}

/* The queued ends refused by the store: each job is left to the backstop
 * as a refused end is (end_pending: its result is read again). */
void jobs_ends_refused(struct server *s, const struct gf_err *e)
{
	fprintf(stderr, "gflowd: recording the end of %zu job%s: %s\n", s->nends, s->nends == 1 ? "" : "s", e->msg);
	jobs_txn_rollback(s);
	usage_drop(s);
	for (size_t i = 0; i < s->nends; i++) {
		struct job *j = queued_job(s, &s->ends[i]);

		if (j)
			reap_end_unrecorded(s, j, s->ends[i].has_result ? &s->ends[i].result : NULL);
	}
	ends_clear(s);
}

/* Every queued end, in a transaction opened here for the caller to commit
 * (the pass records what they make room to start in it: one commit and one
 * sync for both). -1: refused (ends_refused). */
int jobs_ends_begin(struct server *s)
{
	struct gf_err e;

	if (jobs_txn_begin_sync_later(s, &e))
		goto fail;
	for (size_t i = 0; i < s->nends && !s->txn.failed; i++) {
		struct queued_end *q = &s->ends[i];
		struct job *j = queued_job(s, q);

		if (j && end_in_txn(s, j, q->has_result ? &q->result : NULL, q->why, &e))
			goto fail;
	}
	cascade_work(s);
	return 0;
fail:
	jobs_ends_refused(s, &e);
	return -1;
}

/* After the ends' commit, synced: before any end is shown or answered. */
void jobs_ends_committed(struct server *s)
{
	size_t n = 0;

	usage_commit(s);
	cascade_after(s);
	for (size_t i = 0; i < s->nends; i++) {
		struct job *j = queued_job(s, &s->ends[i]);

		if (j) {
			jr_w(j)->end_queued = false;
			end_after(s, j);
			n++;
		}
	}
	ends_clear(s);
	vlog(3, "%zu end%s recorded in one commit", n, n == 1 ? "" : "s");
}

void jobs_close_ends(struct server *s)
{
	struct gf_err e;

	/* A stop records them, and starts nothing. */
	if (s->nends && jobs_ends_begin(s) == 0) {
		if (jobs_txn_commit(s, &e))
			jobs_ends_refused(s, &e);
		else {
			jobs_txn_sync(s);
			jobs_ends_committed(s);
		}
	}
	ends_clear(s);
	free(s->ends);
	s->ends = NULL;
	s->ends_cap = 0;
}

int jobs_freed(struct server *s, struct job *j)
{
	struct gf_err e;

	if (jobs_txn_begin(s, &e))
		goto fail;
	jobs_touch(s, j);
	j->active = false;
	jobs_save(s, j, &e);
	if (jobs_txn_commit(s, &e))
		goto fail;
	if (j->rt)
		j->rt->draining = false;
	reap_forget(s, j);
	server_schedule(s);
	return 0;
fail:
	fprintf(stderr, "gflowd: job %lld: %s (trying again)\n", (long long)j->id, e.msg);
	return -1;
}
