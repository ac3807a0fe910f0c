/* jobs.c — the job table and the state machine: every transition of a job
 * (submit-time checks, cancel, hold, release, end, retry, dependency
 * cascade) and the scheduler pass that turns decisions into started jobs.
 * Each transition is written to the store before it is acted on. */
#include "server.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runfile.h"

struct job *jobs_get(struct server *s, int64_t id)
{
	return id > 0 && id <= s->max_id ? s->jobs[id] : NULL;
}

int jobs_add(struct server *s, struct job *j)
{
	if (j->id >= s->njobs_cap) {
		int64_t cap = s->njobs_cap ? s->njobs_cap : 1024;

		while (cap <= j->id)
			cap *= 2;
		s->jobs = realloc(s->jobs, (size_t)cap * sizeof *s->jobs);
		if (!s->jobs)
			abort();
		memset(s->jobs + s->njobs_cap, 0, (size_t)(cap - s->njobs_cap) * sizeof *s->jobs);
		s->njobs_cap = cap;
	}
	s->jobs[j->id] = j;
	if (j->id > s->max_id)
		s->max_id = j->id;
	if (!job_state_ended(j->state) || j->active) {
		if (s->nopen == s->open_cap) {
			s->open_cap = s->open_cap ? s->open_cap * 2 : 1024;
			s->open = realloc(s->open, s->open_cap * sizeof *s->open);
			if (!s->open)
				abort();
		}
		s->open[s->nopen++] = j->id;	/* ids only grow: stays sorted */
	}
	return 0;
}

static bool is_open(const struct job *j)
{
	return j && (!job_state_ended(j->state) || j->active);
}

struct job *jobs_open_at(struct server *s, size_t i)
{
	struct job *j = s->jobs[s->open[i]];

	return is_open(j) ? j : NULL;
}

/* A job that is over never opens again (ended states are final). */
static void compact_open(struct server *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->nopen; i++)
		if (is_open(s->jobs[s->open[i]]))
			s->open[k++] = s->open[i];
	s->nopen = k;
}

static int load_one(void *arg, int64_t id, json_t *row, const char *bad)
{
	struct server *s = arg;
	struct gf_err e;
	struct job *j = row ? job_from_json(row, &e) : NULL;

	if (!j) {
		fprintf(stderr, "gflowd: job %lld: %s\n", (long long)id, row ? e.msg : bad);
		return -1;
	}
	j->id = id;
	return jobs_add(s, j);
}

int jobs_load(struct server *s, struct gf_err *e)
{
	int64_t seq;

	if (store_load_jobs(s->store, load_one, s, e))
		return -1;
	for (int64_t i = 1; i <= s->max_id; i++) {
		struct job *j = s->jobs[i], *prev;

		if (j && j->retry_of && (prev = jobs_get(s, j->retry_of)))
			prev->retried_by = j->id;
	}
	seq = store_max_job_id(s->store);
	if (seq > s->max_id)
		s->max_id = seq;
	return 0;
}

int jobs_save(struct server *s, struct job *j, struct gf_err *e)
{
	return store_update_job(s->store, j, e);
}

void jobs_log_path(struct server *s, int64_t id, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%lld.log", s->paths.log_dir, (long long)id);
}

bool jobs_may_change(struct server *s, const struct job *j, uid_t caller)
{
	return caller == 0 || caller == s->uid || caller == j->uid;
}

int64_t jobs_resolve_ref(struct server *s, uid_t uid, const char *ref, struct gf_err *e)
{
	char *end;
	long long back = 0, id;

	if (ref[0] != '@') {
		errno = 0;
		id = strtoll(ref, &end, 10);
		if (errno || *end || end == ref || id <= 0)
			return gf_err_set(e, "invalid job id '%s'", ref);
		if (!jobs_get(s, id))
			return gf_err_set(e, "job %lld does not exist", id);
		return id;
	}
	if (ref[1] == '~') {
		errno = 0;
		back = strtoll(ref + 2, &end, 10);
		if (errno || *end || end == ref + 2 || back < 0)
			return gf_err_set(e, "invalid job reference '%s': expected @ or @~N", ref);
	} else if (ref[1])
		return gf_err_set(e, "invalid job reference '%s': expected @ or @~N", ref);
	for (int64_t i = s->max_id; i > 0; i--) {
		struct job *j = s->jobs[i];

		if (j && j->uid == uid && back-- == 0)
			return i;
	}
	return gf_err_set(e, "'%s' names no job: you have %s", ref,
			  back < 0 ? "fewer jobs than that" : "no jobs yet");
}

/* ---- dependencies ------------------------------------------------------ */

int64_t jobs_latest_attempt(struct server *s, int64_t id)
{
	struct job *j;

	while ((j = jobs_get(s, id)) && j->retried_by)
		id = j->retried_by;
	return id;
}

/* 1: satisfied, 0: still possible, -1: can never be satisfied (*culprit). */
static int deps_state(struct server *s, const struct job *j, int64_t *culprit)
{
	size_t done = 0, failed = 0;

	for (size_t i = 0; i < j->ndeps; i++) {
		/* A retried parent counts by its newest attempt. */
		struct job *p = jobs_get(s, jobs_latest_attempt(s, j->deps[i]));

		if (p && p->state == JS_FINISHED)
			done++;
		else if (!p || job_state_ended(p->state)) {
			failed++;
			if (culprit && !*culprit)
				*culprit = j->deps[i];
		}
	}
	if (j->dep_any)
		return done ? 1 : (failed == j->ndeps && j->ndeps ? -1 : 0);
	return failed ? -1 : (done == j->ndeps ? 1 : 0);
}

static bool reaches(struct server *s, int64_t from, int64_t target, int depth)
{
	struct job *j = jobs_get(s, from);

	if (from == target)
		return true;
	if (!j || depth > 10000)
		return false;
	for (size_t i = 0; i < j->ndeps; i++)
		if (reaches(s, j->deps[i], target, depth + 1))
			return true;
	return false;
}

bool jobs_would_cycle(struct server *s, int64_t id, const int64_t *deps, size_t ndeps)
{
	for (size_t i = 0; i < ndeps; i++)
		if (reaches(s, deps[i], id, 0))
			return true;
	return false;
}

const char *jobs_blocked_reason(struct server *s, const struct job *j, double now)
{
	if (j->ndeps && deps_state(s, j, NULL) != 1)
		return "Dependency";
	if (j->begin_at > now)
		return "BeginTime";
	return NULL;
}

static void end_now(struct job *j, enum job_state st, const char *reason)
{
	j->state = st;
	job_set_reason(j, reason);
	j->end_time = now_real();
}

static void append_id(int64_t **v, size_t *n, int64_t id)
{
	*v = realloc(*v, (*n + 1) * sizeof **v);
	if (!*v)
		abort();
	(*v)[(*n)++] = id;
}

/* Cancel, in memory, every queued job whose dependencies can no longer be
 * met because `parent` ended badly; cascades. Caller saves them. Scans all
 * open jobs: a retry has a higher id than the dependents moved onto it. */
static void cascade(struct server *s, int64_t parent, int64_t **out, size_t *nout)
{
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *c = jobs_open_at(s, i);
		int64_t culprit = 0;
		char reason[64];
		bool uses = false;

		if (!c || (c->state != JS_QUEUED && c->state != JS_HOLD) || !c->auto_cancel)
			continue;
		for (size_t k = 0; k < c->ndeps && !uses; k++)
			uses = c->deps[k] == parent;
		if (!uses || deps_state(s, c, &culprit) != -1)
			continue;
		snprintf(reason, sizeof reason, "DependencyFailed:%lld", (long long)parent);
		end_now(c, JS_CANCELLED, reason);
		append_id(out, nout, c->id);
		cascade(s, c->id, out, nout);
	}
}

static int save_ids(struct server *s, const int64_t *ids, size_t n, struct gf_err *e)
{
	for (size_t i = 0; i < n; i++)
		if (jobs_save(s, jobs_get(s, ids[i]), e))
			return -1;
	return 0;
}

/* ---- user transitions -------------------------------------------------- */

int jobs_cancel_many(struct server *s, const int64_t *ids, size_t n, const char *reason, int64_t **also,
		     size_t *nalso, struct gf_err *e)
{
	size_t first = *nalso;
	int64_t *mine = calloc(n + 1, sizeof *mine);
	size_t nmine = 0;

	if (!mine)
		abort();
	if (store_begin(s->store, e)) {
		free(mine);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs_get(s, ids[i]);

		if (!j || job_state_ended(j->state))
			continue;	/* ended already, or by an earlier one's cascade */
		j->state = JS_CANCELLED;
		job_set_reason(j, reason);
		if (!j->active)
			j->end_time = now_real();
		mine[nmine++] = j->id;
		cascade(s, j->id, also, nalso);
	}
	/* One commit for the whole request, however many jobs it touched. */
	if (save_ids(s, mine, nmine, e) || save_ids(s, *also + first, *nalso - first, e) ||
	    store_commit(s->store, e)) {
		store_rollback(s->store);
		free(mine);
		return gf_err_prefix(e, "cancelling");
	}
	/* Their resources stay booked until each runner reports that every
	 * process is gone. */
	for (size_t i = 0; i < nmine; i++) {
		struct job *j = jobs_get(s, mine[i]);

		if (j->active)
			reap_signal(s, j, SIGTERM);
	}
	free(mine);
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
	j->state = JS_HOLD;
	job_set_reason(j, "JobHeldUser");
	if (jobs_save(s, j, e)) {
		j->state = JS_QUEUED;
		return -1;
	}
	server_schedule(s);
	return 0;
}

int jobs_release(struct server *s, struct job *j, double at, struct gf_err *e)
{
	double old_begin = j->begin_at;
	enum job_state old = j->state;

	if (j->state != JS_HOLD && !(j->state == JS_QUEUED && at > 0))
		return gf_err_set(e, "job %lld is %s: only held jobs can be released", (long long)j->id,
				  job_state_name(j->state));
	j->state = JS_QUEUED;
	if (at > 0)
		j->begin_at = at;
	job_set_reason(j, NULL);
	if (jobs_save(s, j, e)) {
		j->state = old;
		j->begin_at = old_begin;
		return -1;
	}
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
	if (j->shared && j->gpus > 0) {
		uint64_t biggest = 0;

		for (size_t i = 0; i < s->snap.ndev; i++)
			if (s->snap.devs[i].total_mb > biggest)
				biggest = s->snap.devs[i].total_mb;
		if ((uint64_t)j->gpu_memory_mb > biggest)
			return gf_err_set(e, "--gpu-memory %lldM: the largest GPU has %lluM",
					  (long long)j->gpu_memory_mb, (unsigned long long)biggest);
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
	n->retry_of = old->id;
	n->submit_time = now_real();
	n->start_time = n->end_time = 0;
	n->has_exit = false;
	n->exit_code = n->exit_signal = 0;
	n->gpu_mask = 0;
	n->memory_enforced = -1;
	n->active = false;
	n->runner_pid = 0;
	n->runner_ticks = 0;
	n->run_seq = 0;
	job_set_str(&n->tmux_session, NULL);
	if (store_insert_job(s->store, n, e) < 0) {
		job_free(n);
		return NULL;
	}
	return n;
}

/* Queued dependents of `old` now wait for `neu` instead. */
static int move_dependents(struct server *s, int64_t old, int64_t neu, struct gf_err *e)
{
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *c = jobs_open_at(s, i);
		bool changed = false;

		if (!c || (c->state != JS_QUEUED && c->state != JS_HOLD))
			continue;
		for (size_t k = 0; k < c->ndeps; k++)
			if (c->deps[k] == old) {
				c->deps[k] = neu;
				changed = true;
			}
		if (changed && jobs_save(s, c, e))
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
		end_now(j, cancelled ? JS_CANCELLED : JS_FAILED, cancelled ? j->reason : reason);
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
		j->state = JS_TIMEOUT;
		job_set_reason(j, NULL);
	} else if (!strcmp(r->ended_by, "cancel")) {
		j->state = JS_CANCELLED;
		job_set_reason(j, "CancelledByUser");
	} else if (r->oom) {
		j->state = JS_FAILED;
		job_set_reason(j, "OutOfMemory");
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

void jobs_ended(struct server *s, struct job *j, const struct job_result *r, const char *why)
{
	struct gf_err e;
	int64_t *also = NULL;
	size_t nalso = 0;
	struct job *retry = NULL;

	j->active = false;
	apply_result(j, r, why);
	if (store_begin(s->store, &e))
		goto fail;
	if (j->state == JS_FAILED && j->attempt < j->max_retries) {
		retry = make_retry(s, j, &e);
		if (!retry || move_dependents(s, j->id, retry->id, &e))
			goto fail;
	} else if (j->state != JS_FINISHED)
		cascade(s, j->id, &also, &nalso);
	if (jobs_save(s, j, &e) || save_ids(s, also, nalso, &e) || store_commit(s->store, &e))
		goto fail;
	if (retry) {
		jobs_add(s, retry);
		j->retried_by = retry->id;
	}
	free(also);
	reap_forget(s, j);
	server_schedule(s);
	return;
fail:
	/* The runner's result file stays; the next daemon start collects it. */
	fprintf(stderr, "gflowd: recording the end of job %lld: %s\n", (long long)j->id, e.msg);
	store_rollback(s->store);
	if (retry)
		job_free(retry);
	free(also);
	server_schedule(s);
}

/* ---- the pass ---------------------------------------------------------- */

static void arm_begin_timer(struct server *s, double next, double now)
{
	struct timeval tv;
	double d;

	if (!isfinite(next)) {
		event_del(s->begin_ev);
		return;
	}
	d = next - now;
	if (d < 0)
		d = 0;
	tv.tv_sec = (time_t)d;
	tv.tv_usec = (suseconds_t)((d - (double)tv.tv_sec) * 1e6) + 1000;
	event_add(s->begin_ev, &tv);
}

/* Queued jobs whose dependencies can no longer be met (a parent had ended
 * badly before they were submitted or moved onto it) are cancelled here, so
 * that no order of events leaves them waiting forever. */
static void cancel_impossible(struct server *s)
{
	int64_t *ids = NULL;
	size_t n = 0;
	struct gf_err e;

	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);
		int64_t culprit = 0;
		char reason[64];

		if (!j || j->state != JS_QUEUED || !j->auto_cancel || !j->ndeps ||
		    deps_state(s, j, &culprit) != -1)
			continue;
		snprintf(reason, sizeof reason, "DependencyFailed:%lld", (long long)culprit);
		end_now(j, JS_CANCELLED, reason);
		append_id(&ids, &n, j->id);
		cascade(s, j->id, &ids, &n);
	}
	if (n && (store_begin(s->store, &e) || save_ids(s, ids, n, &e) || store_commit(s->store, &e))) {
		fprintf(stderr, "gflowd: cancelling jobs with failed dependencies: %s\n", e.msg);
		store_rollback(s->store);
	}
	free(ids);
}

void jobs_schedule_pass(struct server *s)
{
	size_t nq = 0, nr = 0, ng, started;
	struct sched_job *q;
	struct sched_running *r;
	struct sched_decision *d;
	struct sched_gpu gpus[GFLOW_MAX_GPUS];
	struct sched_input in;
	double now = now_real(), next_begin = INFINITY;
	struct gf_err e;

	compact_open(s);
	cancel_impossible(s);
	gpustate_refresh(s);
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);

		if (j && j->state == JS_QUEUED)
			nq++;
		if (j && j->active)
			nr++;
	}
	q = calloc(nq + 1, sizeof *q);
	r = calloc(nr + 1, sizeof *r);
	d = calloc(nq + 1, sizeof *d);
	if (!q || !r || !d)
		abort();
	nq = nr = 0;
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);

		if (!j)
			continue;
		if (j->active)
			r[nr++] = (struct sched_running){
				.gpu_mask = j->gpu_mask,
				.memory_mb = j->memory_mb,
				.end_by = j->time_limit_secs ? j->start_time + (double)j->time_limit_secs : 0,
				.group_id = j->group_id,
			};
		if (j->state != JS_QUEUED)
			continue;
		q[nq] = (struct sched_job){
			.id = j->id,
			.priority = j->priority,
			.gpus = j->gpus,
			.shared = j->shared,
			.gpu_memory_mb = j->gpu_memory_mb,
			.memory_mb = j->memory_mb,
			.time_limit_secs = j->time_limit_secs,
			.group_id = j->group_id,
			.group_cap = j->max_concurrent,
			.blocked = jobs_blocked_reason(s, j, now),
		};
		if (j->begin_at > now && j->begin_at < next_begin)
			next_begin = j->begin_at;
		nq++;
	}
	ng = gpustate_sched_gpus(s, gpus);
	in = (struct sched_input){
		.jobs = q, .njobs = nq, .running = r, .nrunning = nr, .gpus = gpus, .ngpus = ng,
		.mem_total_mb = s->mem_total_mb, .now = now, .strategy = s->strategy,
		.seed = s->sched_seed = s->sched_seed * 6364136223846793005ULL + 1442695040888963407ULL,
		.topo = s->snap.ndev == ng ? s->snap.topo : NULL,
	};
	started = sched_pass(&in, d);

	for (size_t i = 0; i < nq; i++) {
		struct job *j = jobs_get(s, d[i].id);
		const char *reason = d[i].reason;

		if (reason) {
			if (!j->reason || strcmp(j->reason, reason))
				job_set_reason(j, reason);	/* waiting reasons live in memory */
			continue;
		}
		j->state = JS_RUNNING;
		job_set_reason(j, NULL);
		j->start_time = now_real();
		j->gpu_mask = d[i].gpu_mask;
		j->active = true;
		j->runner_pid = 0;
		j->runner_ticks = 0;
		j->run_seq++;
		if (jobs_save(s, j, &e)) {
			fprintf(stderr, "gflowd: starting job %lld: %s\n", (long long)j->id, e.msg);
			j->state = JS_QUEUED;
			j->active = false;
			j->gpu_mask = 0;
			continue;
		}
		if (exec_start_job(s, j, &e)) {
			fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, e.msg);
			jobs_ended(s, j, NULL, e.msg);
			continue;
		}
		reap_watch_start(s, j);
	}
	(void)started;
	arm_begin_timer(s, next_begin, now);
	free(q);
	free(r);
	free(d);
}
