/* pass.c — the scheduler pass: the pure sched_pass()'s input built from
 * the job table (every rule it weighs), its decisions turned into started
 * jobs, and the expected starts worked out from the same input.
 *
 * A pass records the ends queued since the last one (jobs.c) and the
 * starts they make room for in one transaction, synced once before any of
 * them is shown or answered and before any of its jobs runs: the first
 * start is handed ahead to a standby that holds it until the sync is done.
 * A pass whose inputs did not change since the last one is skipped. */
#include "engine.h"

#include "grow.h"
#include "parse.h"
#include "verbose.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h"

/* A submission runs the pass in its own transaction only below this many
 * live jobs: the pass walks them all. */
#define START_AT_ONCE_MAX_OPEN 1000

static void arm_begin_timer(struct server *s, double next, double now)
{
	struct timeval tv;

	if (!isfinite(next)) {
		event_del(s->begin_ev);
		return;
	}
	tv = gf_timeval((next > now ? next - now : 0) + 0.001);	/* a moment after it */
	event_add(s->begin_ev, &tv);
}

/* A job the pass starts, as the store records it (in the open transaction). */
static void record_start(struct server *s, struct job *j, uint64_t gpu_mask, struct gf_err *e)
{
	jobs_touch(s, j);
	j->state = JS_RUNNING;
	job_set_reason(j, NULL);
	j->start_time = now_real();
	j->end_time = 0;	/* a requeued job's last run had one */
	j->gpu_mask = gpu_mask;
	usage_start(s, j);
	cpus_assign(s, j);	/* before it is active: its own old ids do not count */
	j->active = true;
	j->runner_pid = 0;
	j->runner_ticks = 0;
	j->run_seq++;
	jobs_save(s, j, e);
}

/* Queued or held jobs whose dependencies can no longer be met (a parent had
 * ended badly before they were submitted or moved onto it, or the daemon
 * stopped in the middle of a cascade) go through the cascade queue, so that
 * no order of events leaves them waiting forever. While a cascade is under
 * way its queue gets to them; this runs again when it is through. */
static void cancel_impossible(struct server *s)
{
	size_t before = s->cq_len;

	if (!s->deps_dirty || s->cq_head < s->cq_len)
		return;
	s->deps_dirty = false;
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);
		int64_t culprit = 0;

		if (j && cascade_may_cancel(j) && jobs_deps_state(s, j, &culprit) == -1)
			cascade_push(s, j->id, 0, NULL);
	}
	if (s->cq_len > before)
		cascade_slice(s);
}

/* A pass whose inputs are those of the last one would decide the same:
 * no commit since (every change of jobs, quotas, reservations and usage
 * commits), the same GPUs as the pass sees them and the same host memory,
 * its timer (begin times, reservation edges, a retry) not yet due, nothing
 * started or refused then, and at most PASS_MAX_AGE ago (what only time
 * changes: decayed fair share, a day's GPU-hours). */
#define PASS_MAX_AGE 30.0

static bool gpus_equal(const struct sched_gpu *a, const struct sched_gpu *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].index != b[i].index || a[i].usable != b[i].usable || a[i].exclusive != b[i].exclusive ||
		    a[i].nshared != b[i].nshared || a[i].total_mb != b[i].total_mb ||
		    a[i].booked_mb != b[i].booked_mb || a[i].foreign_mb != b[i].foreign_mb)
			return false;
	return true;
}

static bool pass_unchanged(struct server *s, const struct sched_gpu *gpus, size_t ng, double now)
{
	struct last_pass *l = &s->last_pass;

	return l->valid && l->commits == s->commits && l->ngpus == ng && gpus_equal(l->gpus, gpus, ng) &&
	       l->mem_total_mb == s->mem_total_mb && l->cpus_total == s->cpus_total &&
	       now < l->due && now >= l->at && now - l->at < PASS_MAX_AGE;
}

static void pass_remember(struct server *s, const struct sched_gpu *gpus, size_t ng, double now,
			  double due, bool again)
{
	struct last_pass *l = &s->last_pass;

	l->valid = !again && ng <= GFLOW_MAX_GPUS;
	l->commits = s->commits;
	l->ngpus = ng;
	memcpy(l->gpus, gpus, ng * sizeof *gpus);
	l->mem_total_mb = s->mem_total_mb;
	l->cpus_total = s->cpus_total;
	l->at = now;
	l->due = due;
}

/* Launch the runner of a job recorded as started. */
static void launch(struct server *s, struct job *j)
{
	char ids[256];
	struct gf_err e;
	int started = exec_start_job(s, j, &e);

	if (started < 0 && (fd_short(errno) || !fd_room())) {
		/* Nothing ran: it waits for descriptors (the pass asks for room
		 * before it starts anything). */
		fd_note("job %lld: %s: it queues again until gflowd has descriptors", (long long)j->id, e.msg);
		reap_start_undo(s, j);
		fd_retry_pass(s);
		return;
	}
	if (started < 0) {
		fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, e.msg);
		if (jobs_ended(s, j, NULL, e.msg)) {
			jr_w(j)->backstop = "the job could not be started";
			jr_w(j)->end_pending = true;	/* reap.c tries again */
		}
		return;
	}
	reap_watch_start(s, j, started == 1);
	vlog(1, "job %lld (%s, user %s) started, GPUs [%s]", (long long)j->id, j->name ? j->name : "",
	     j->user ? j->user : "?", (gf_format_gpu_mask(j->gpu_mask, ids, sizeof ids), ids));
}

/* A launch recorded by the transaction just committed, not yet synced
 * (jobs_txn_begin_sync_later): handed to a standby held until the sync is
 * done (the caller's jobs_txn_sync, then standby_release): its runner
 * prepares the start while the store syncs. False when j's start would not
 * go to a standby: nothing was done, and j is launched after the sync. */
static bool launch_held(struct server *s, struct job *j)
{
	if (!exec_holds_start(s, j))
		return false;
	s->start_held = true;
	launch(s, j);
	s->start_held = false;
	return true;
}

/* s->launch[i]'s job, when it is still to be launched (a refused commit
 * took it back), else NULL. */
static struct job *to_launch(struct server *s, size_t i)
{
	struct job *j = jobs_get(s, s->launch[i].id);

	if (!j || j->state != JS_RUNNING || !j->active || j->run_seq != s->launch[i].run_seq || j->runner_pid ||
	    jr(j)->pidfd >= 0)
		return NULL;
	return j;
}

/* Launch what a submission's transaction recorded as started (and that
 * still is: a refused commit took it back). */
void jobs_launch_recorded(struct server *s)
{
	size_t n = s->nlaunch;

	s->nlaunch = 0;
	for (size_t i = 0; i < n; i++) {
		struct job *j = to_launch(s, i);

		if (j)
			launch(s, j);
	}
}

static bool pass_or_estimate(struct server *s, bool joined, bool est);

static bool pass(struct server *s, bool joined)
{
	return pass_or_estimate(s, joined, false);
}

bool jobs_schedule_pass(struct server *s)
{
	jobs_launch_recorded(s);	/* none are left, but for a refused commit's */
	return pass(s, false);	/* it records the queued ends too */
}

/* A submission's transaction is open: its jobs are in the table. When the
 * open list is short (the pass is cheap), the pass runs inside it and what
 * can start is recorded in the same commit as the submission: one sync of
 * the store instead of two before a job starts. Their runners are launched
 * as soon as the answer is written (api_jobs.c), else by the next pass (a
 * crash in between is the recovered case "recorded as started, no runner
 * yet": it queues again). */
void jobs_start_at_once(struct server *s)
{
	if (s->txn.open && !s->txn.failed && s->nlive <= START_AT_ONCE_MAX_OPEN)
		pass(s, true);
}

/* The jobs a pass looks at: the live list and, inside a submission's
 * transaction (joined), the jobs it adds (they join the list at commit). */
static size_t pass_njobs(struct server *s, bool joined)
{
	return s->nlive + (joined ? s->txn.nundo : 0);
}

static struct job *pass_job_at(struct server *s, size_t i, bool joined)
{
	struct job *j;

	if (i < s->nlive)
		return jobs_live_at(s, i);
	j = joined ? jobs_txn_added_at(s, i - s->nlive) : NULL;
	return jobs_is_live(j) ? j : NULL;
}

/* ---- expected starts ---------------------------------------------------- */

static int cmp_est(const void *a, const void *b)
{
	int64_t x = ((const struct sched_estimate *)a)->id, y = ((const struct sched_estimate *)b)->id;

	return (x > y) - (x < y);
}

/* The scheduler's input as the pass built it, driven forward (estimate.h):
 * what each blocked job waits for, and what each running job gives back. */
static void estimate_run(struct server *s, const struct sched_input *in, struct job **qj,
			 const struct quota_subjects *qs, bool joined)
{
	struct sched_est_job *x = calloc(in->njobs + 1, sizeof *x);
	struct sched_est_running *rx = calloc(in->nrunning + 1, sizeof *rx);
	struct sched_estimate *out = calloc(in->njobs + 1, sizeof *out);
	int64_t *deps;
	size_t ndeps = 0, nr = 0;
	double dflt = (double)s->cfg.default_runtime_estimate;

	for (size_t i = 0; i < in->njobs; i++)
		ndeps += qj[i]->ndeps;
	deps = calloc(ndeps + 1, sizeof *deps);
	if (!x || !rx || !out || !deps)
		abort();
	ndeps = 0;
	for (size_t i = 0; i < in->njobs; i++) {
		const struct job *j = qj[i];

		x[i] = (struct sched_est_job){ .begin_at = jm(j)->begin_at, .deps = deps + ndeps,
					       .dep_any = j->dep_any };
		for (size_t k = 0; k < j->ndeps && in->jobs[i].blocked; k++) {
			/* A retried parent counts by its newest attempt; a
			 * finished one is met (an id 0: never). */
			struct job *p = jobs_get(s, jobs_latest_attempt(s, j->deps[k]));

			if (p && p->state == JS_FINISHED)
				continue;
			deps[ndeps++] = p && !job_state_ended(p->state) ? p->id : 0;
			x[i].ndeps++;
		}
	}
	for (size_t i = 0; i < pass_njobs(s, joined) && nr < in->nrunning; i++) {
		struct job *j = pass_job_at(s, i, joined);

		if (!j || !j->active)
			continue;
		rx[nr] = (struct sched_est_running){
			.id = j->id, .gpus = j->gpus, .shared = j->shared, .gpu_memory_mb = jm(j)->gpu_memory_mb,
			.end = j->time_limit_secs ? j->start_time + (double)j->time_limit_secs
			       : dflt > 0 ? j->start_time + dflt : 0,
		};
		quota_subjects_of(qs, j, &rx[nr].user_quota, &rx[nr].project_quota);
		nr++;
	}
	sched_estimate(&(struct sched_est_input){ .in = in, .jobs = x, .running = rx, .default_runtime = dflt },
		       out);
	qsort(out, in->njobs, sizeof *out, cmp_est);
	free(s->est.v);
	s->est = (struct est_cache){ .valid = true, .commits = s->commits, .at = in->now, .v = out,
				     .n = in->njobs };
	free(x);
	free(rx);
	free(deps);
}

const struct sched_estimate *jobs_expected(struct server *s, int64_t id)
{
	struct sched_estimate key = { .id = id };
	double now = now_real();

	if (!s->est.valid || s->est.commits != s->commits || now < s->est.at || now - s->est.at > 5)
		pass_or_estimate(s, false, true);
	return s->est.n ? bsearch(&key, s->est.v, s->est.n, sizeof key, cmp_est) : NULL;
}

void jobs_expected_close(struct server *s)
{
	free(s->est.v);
	s->est = (struct est_cache){ 0 };
}

/* One scheduler pass. joined: inside the caller's transaction (see
 * jobs_start_at_once), which commits the starts; they are launched later.
 * est: only work out the expected starts (s->est) from the same input.
 * Otherwise the ends queued since the last pass are recorded in its own
 * transaction, with the starts they make room for: one commit and one sync
 * for both, before any of them is shown, answered or launched. */
static bool pass_or_estimate(struct server *s, bool joined, bool est)
{
	size_t nq = 0, nr = 0, ng, started;
	struct sched_job *q;
	struct job **qj;
	struct sched_running *r;
	struct sched_decision *d;
	struct sched_resv *resvs;
	struct quota_subjects *qs;
	size_t nresvs, nsubjects, nusers = 0;
	struct user_usage *usage = NULL;
	const struct sched_quota *subjects;
	struct sched_gpu gpus[GFLOW_MAX_GPUS];
	struct sched_input in;
	struct sched_preempt preempt = { 0 };
	double now = now_real(), next_begin = INFINITY;
	bool recorded = false, ends = false, ends_lost = false, in_txn = joined;
	struct job *held = NULL;
	struct gf_err e;
	uint64_t traced = gf_trace_on() ? gf_trace_now() : 0;	/* trace.h */

	if (!joined && !est) {	/* these change what a transaction restores */
		jobs_compact(s);
		cancel_impossible(s);
	}
	if (!joined && !est && s->nends)
		in_txn = ends = jobs_ends_begin(s) == 0;	/* what they held is free in it */
	gpustate_refresh(s);
	ng = gpustate_sched_gpus(s, gpus);
	if (!joined && !est && !ends && pass_unchanged(s, gpus, ng, now)) {
		/* The timer may have fired a moment before its time (the loop's
		 * clock is not the wall clock): it is armed again for it. */
		arm_begin_timer(s, s->last_pass.due, now);
		return false;
	}
	for (size_t i = 0; i < pass_njobs(s, in_txn); i++) {
		struct job *j = pass_job_at(s, i, in_txn);

		if (j && j->state == JS_QUEUED && !jm(j)->cluster)	/* Slurm's, not ours */
			nq++;
		if (j && j->active)
			nr++;
	}
	if (s->cfg.fair_share_enabled)
		usage = usage_snapshot(s, now, &nusers);
	q = calloc(nq + 1, sizeof *q);
	qj = calloc(nq + 1, sizeof *qj);
	r = calloc(nr + 1, sizeof *r);
	d = calloc(nq + 1, sizeof *d);
	if (!q || !qj || !r || !d)
		abort();
	nq = nr = 0;
	for (size_t i = 0; i < pass_njobs(s, in_txn); i++) {
		struct job *j = pass_job_at(s, i, in_txn);

		if (!j)
			continue;
		if (j->active)
			r[nr++] = (struct sched_running){
				.gpu_mask = j->gpu_mask,
				.memory_mb = j->memory_mb,
				.cpus = job_cpus(j),
				.end_by = j->time_limit_secs ? j->start_time + (double)j->time_limit_secs : 0,
				.group_id = job_group_id(j),
				.id = j->id,
				.start = j->start_time,
				.uid = (uint32_t)j->uid,
				/* a requeued job still draining is no candidate */
				.preemptible = job_preemptible(jm(j)) && j->state == JS_RUNNING,
				.preempting = jm(j)->preempt_since > 0,
				.shared = j->shared,
			};
		if (j->state != JS_QUEUED || jm(j)->cluster)
			continue;
		q[nq] = (struct sched_job){
			.id = j->id,
			.priority = jobs_cross_priority(s, j),
			.own_priority = j->priority,
			.gpus = j->gpus,
			.shared = j->shared,
			.gpu_memory_mb = jm(j)->gpu_memory_mb,
			.memory_mb = j->memory_mb,
			.cpus = job_cpus(j),
			.time_limit_secs = j->time_limit_secs,
			.group_id = job_group_id(j),
			.group_cap = j->max_concurrent,
			.blocked = jobs_blocked_reason(s, j, now),
			.uid = (uint32_t)j->uid,
			.usage = usage_in(usage, nusers, j->user),
			.preemptible = job_preemptible(jm(j)),
		};
		qj[nq] = j;
		if (jm(j)->begin_at > now && jm(j)->begin_at < next_begin)
			next_begin = jm(j)->begin_at;
		nq++;
	}
	/* Fair use: quotas, reservations (whose edges wake the next pass). */
	qs = quota_subjects_build(s, q, qj, nq, now);
	subjects = quota_subjects_array(qs, &nsubjects);
	resvs = reserve_sched(s, now, &nresvs);
	if (reserve_next_edge(s, now) < next_begin)
		next_begin = reserve_next_edge(s, now);
	in = (struct sched_input){
		.jobs = q, .njobs = nq, .running = r, .nrunning = nr, .gpus = gpus, .ngpus = ng,
		.mem_total_mb = s->mem_total_mb, .cpus_total = s->cpus_total, .now = now, .strategy = s->strategy,
		.seed = est ? s->sched_seed : (s->sched_seed = s->sched_seed * 6364136223846793005ULL + 1442695040888963407ULL),
		.topo = s->snap.ndev == ng ? s->snap.topo : NULL,
		.quotas = subjects, .nquotas = nsubjects, .resvs = resvs, .nresvs = nresvs,
		.no_limit_horizon = NO_LIMIT_HORIZON_SECS,
	};
	if (!joined && !est) {	/* victims are preempted in their own commits */
		preempt.victims = calloc(nr + 1, sizeof *preempt.victims);
		if (!preempt.victims)
			abort();
		in.preempt = &preempt;
	}
	if (est) {
		estimate_run(s, &in, qj, qs, joined);
		quota_subjects_free(qs);
		free(resvs);
		usage_snapshot_free(usage, nusers);
		free(q);
		free(qj);
		free(r);
		free(d);
		return false;
	}
	started = sched_pass(&in, d);
	quota_notes(s, qs, d, nq);
	quota_subjects_free(qs);
	free(resvs);
	usage_snapshot_free(usage, nusers);

	for (size_t i = 0; i < nq; i++) {
		struct job *j = jobs_get(s, d[i].id);
		const char *reason = d[i].reason;

		if (reason && j->reason && !strcmp(j->reason, "Preempted") &&
		    (!strcmp(reason, "Resources") || !strcmp(reason, "Priority")))
			continue;	/* requeued: says so until it starts again */
		if (reason && (!j->reason || strcmp(j->reason, reason)))
			job_set_reason(j, reason);	/* waiting reasons live in memory */
	}
	/* A start needs descriptors (run directory, spawn, pidfd): while other
	 * users' connections leave too few, starts wait (and nothing fails). */
	if (started && !fd_room()) {
		fd_note("gflowd is out of file descriptors: %zu job start%s wait%s (trying again in 1 s)", started,
			started == 1 ? "" : "s", started == 1 ? "s" : "");
		started = 0;
		if (now + 1 < next_begin)
			next_begin = now + 1;
	}
	/* Every start is recorded, in one transaction, before any runner is
	 * launched; when the store refuses, none starts and nothing is booked. */
	if (joined) {
		for (size_t i = 0; i < nq && started && !s->txn.failed; i++) {
			struct job *j = jobs_get(s, d[i].id);

			if (d[i].reason)
				continue;
			record_start(s, j, d[i].gpu_mask, &e);
			s->launch = gf_grow(s->launch, &s->launch_cap, s->nlaunch + 1, sizeof *s->launch, 16);
			s->launch[s->nlaunch].id = j->id;
			s->launch[s->nlaunch++].run_seq = j->run_seq;
			gf_trace_at(traced, "pass", j->id);
		}
		started = 0;	/* launched after the commit (jobs_launch_recorded) */
	} else if ((started || ends) && (ends || jobs_txn_begin_sync_later(s, &e) == 0)) {
		for (size_t i = 0; i < nq && started && !s->txn.failed; i++) {
			struct job *j = jobs_get(s, d[i].id);

			if (d[i].reason)
				continue;
			record_start(s, j, d[i].gpu_mask, &e);
		}
		if (jobs_txn_commit(s, &e) == 0)
			recorded = true;
		else if (ends) {
			jobs_ends_refused(s, &e);
			ends = false;
			ends_lost = true;	/* the pass saw them recorded */
		}
		for (size_t i = 0; i < nq && recorded && traced; i++)
			if (!d[i].reason) {
				gf_trace_at(traced, "pass", d[i].id);
				gf_trace("running_commit", d[i].id);
			}
	}
	if (started && !recorded && !joined) {
		if (!s->starts_refused)
			fprintf(stderr, "gflowd: starting %zu job%s: %s (trying again)\n", started,
				started == 1 ? "" : "s", e.msg);
		if (now + 1 < next_begin)
			next_begin = now + 1;	/* try again in a second */
	}
	if (!joined)
		s->starts_refused = started && !recorded;
	if (!recorded)
		started = 0;
	/* The first start goes to a standby held while the commit is synced
	 * (launch_held), the others after the sync. */
	for (size_t i = 0; i < nq && started; i++)
		if (!d[i].reason) {
			struct job *j = jobs_get(s, d[i].id);

			if (launch_held(s, j))
				held = j;
			break;
		}
	if (!joined)
		jobs_txn_sync(s);
	if (held) {
		gf_trace("synced", held->id);
		standby_release(s);
	}
	if (ends)
		jobs_ends_committed(s);
	for (size_t i = 0; i < nq && started; i++) {
		struct job *j = jobs_get(s, d[i].id);

		if (d[i].reason || j == held)
			continue;
		launch(s, j);
	}
	if (preempt.nvictims) {
		preempt_victims(s, preempt.victims, preempt.nvictims);
		s->last_pass.valid = false;
	}
	free(preempt.victims);
	vlog(3, "scheduler pass: %zu waiting, %zu running, %zu started", nq, nr, started);
	arm_begin_timer(s, next_begin, now);
	/* After the starts' commits: a pass that started or was refused
	 * something is followed by a full one. */
	if (joined)
		s->last_pass.valid = false;	/* its transaction may yet be rolled back */
	else
		pass_remember(s, gpus, ng, now, next_begin, started || s->starts_refused || ends_lost);
	free(q);
	free(qj);
	free(r);
	free(d);
	return true;
}
