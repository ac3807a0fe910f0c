/* table.c — the job table: every job by id, the open list (queued, held
 * and running jobs) and the live list (what a pass and the runs walk), and
 * the questions asked of it (references, dependencies, cycles, log paths).
 * What a commit changes in it is noted here (jobs_committed); transitions
 * are the engine's (engine/jobs.c). */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

struct job *jobs_get(struct server *s, int64_t id)
{
	return id > 0 && id <= s->max_id ? s->jobs[id] : NULL;
}

void jobs_reserve_ids(struct server *s, int64_t id)
{
	int64_t cap = s->njobs_cap ? s->njobs_cap : 1024;

	if (id < s->njobs_cap)
		return;
	while (cap <= id)
		cap *= 2;
	s->jobs = realloc(s->jobs, (size_t)cap * sizeof *s->jobs);
	if (!s->jobs)
		abort();
	memset(s->jobs + s->njobs_cap, 0, (size_t)(cap - s->njobs_cap) * sizeof *s->jobs);
	s->njobs_cap = cap;
}

/* j's submit time raises its block's latest. */
static void since_note(struct server *s, const struct job *j)
{
	size_t b = (size_t)(j->id / JOBS_SINCE_BLOCK);

	if (b >= s->nsince) {
		s->since_max = gf_grow(s->since_max, &s->since_cap, b + 1, sizeof *s->since_max, 64);
		for (size_t k = s->nsince; k <= b; k++)
			s->since_max[k] = 0;	/* no job yet */
		s->nsince = b + 1;
	}
	if (s->since_max[b] < j->submit_time)
		s->since_max[b] = j->submit_time;
}

int64_t jobs_since_next(const struct server *s, double t, int64_t id)
{
	for (size_t b = (size_t)(id / JOBS_SINCE_BLOCK); b < s->nsince; b++)
		if (s->since_max[b] >= t)
			return id > (int64_t)b * JOBS_SINCE_BLOCK ? id : (int64_t)b * JOBS_SINCE_BLOCK;
	return s->max_id + 1;
}

int jobs_add(struct server *s, struct job *j)
{
	jobs_reserve_ids(s, j->id);
	since_note(s, j);
	s->jobs[j->id] = j;
	if (j->id > s->max_id)
		s->max_id = j->id;
	if (!job_state_ended(j->state) || j->active) {
		s->open = gf_grow(s->open, &s->open_cap, s->nopen + 1, sizeof *s->open, 1024);
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

/* A job that is over never opens again (ended states are final). The list
 * is walked only once a good part of it has closed, so that a pass over a
 * few live jobs beside many held ones stays small. */
static void compact_open(struct server *s)
{
	size_t k = 0;

	if (s->open_closed < 64 || s->open_closed * 8 < s->nopen)
		return;
	for (size_t i = 0; i < s->nopen; i++)
		if (is_open(s->jobs[s->open[i]]))
			s->open[k++] = s->open[i];
	s->nopen = k;
	s->open_closed = 0;
}

bool jobs_is_live(const struct job *j)
{
	return j && ((j->state == JS_QUEUED && !jm(j)->cluster) || j->active);
}

struct job *jobs_live_at(struct server *s, size_t i)
{
	struct job *j = s->jobs[s->live[i]];

	return jobs_is_live(j) ? j : NULL;
}

struct job *jobs_active_at(struct server *s, size_t i)
{
	struct job *j = s->jobs[s->live[i]];

	return j && j->active ? j : NULL;
}

void jobs_live_note(struct server *s, struct job *j)
{
	if (j->in_live || !jobs_is_live(j))
		return;
	s->live = gf_grow(s->live, &s->live_cap, s->nlive + 1, sizeof *s->live, 1024);
	s->live[s->nlive++] = j->id;
	j->in_live = true;
}

/* Does the pass see a difference between a and b? (A runner's usage
 * samples, pids and the like it does not read.) */
static bool pass_fields_differ(const struct job *a, const struct job *b)
{
	return a->state != b->state || a->active != b->active || a->gpu_mask != b->gpu_mask ||
	       a->gpus != b->gpus || a->shared != b->shared || jm(a)->gpu_memory_mb != jm(b)->gpu_memory_mb ||
	       a->memory_mb != b->memory_mb || jm(a)->cpus != jm(b)->cpus || a->time_limit_secs != b->time_limit_secs ||
	       a->priority != b->priority || a->priority_by_admin != b->priority_by_admin || job_group_id(a) != job_group_id(b) ||
	       a->max_concurrent != b->max_concurrent || a->uid != b->uid || jm(a)->begin_at != jm(b)->begin_at ||
	       a->start_time != b->start_time || a->dep_any != b->dep_any || a->ndeps != b->ndeps ||
	       (a->ndeps && memcmp(a->deps, b->deps, a->ndeps * sizeof *a->deps)) ||
	       (a->user != b->user && (!a->user || !b->user || strcmp(a->user, b->user))) ||
	       (a->project != b->project && (!a->project || !b->project || strcmp(a->project, b->project))) ||
	       (jm(a)->cluster != NULL) != (jm(b)->cluster != NULL);
}

void jobs_committed(struct server *s, struct job *j, const struct job *before)
{
	if (!j)
		return;
	if (!before || pass_fields_differ(before, j))
		s->commits++;
	jobs_live_note(s, j);
	if (!is_open(j))
		s->open_closed++;
	/* New or changed dependencies, or a parent that is now over. */
	if ((j->ndeps && !job_state_ended(j->state) &&
	     (!before || before->ndeps != j->ndeps || memcmp(before->deps, j->deps, j->ndeps * sizeof *j->deps))) ||
	    (job_ndependents(j) && job_state_ended(j->state) && (!before || !job_state_ended(before->state))))
		s->deps_dirty = true;
}

/* Jobs stay listed only while they qualify. Runs outside transactions (a
 * rollback finds the list as it was). */
static void compact_live(struct server *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = s->jobs[s->live[i]];

		if (jobs_is_live(j))
			s->live[k++] = s->live[i];
		else if (j)
			j->in_live = false;
	}
	s->nlive = k;
}


size_t jobs_unreadable(struct server *s, int64_t *ids, size_t max)
{
	size_t n = 0;

	for (int64_t i = 1; i <= s->max_id; i++)
		if (s->jobs[i] && s->jobs[i]->unreadable) {
			if (n < max)
				ids[n] = i;
			n++;
		}
	return n;
}

void jobs_log_name(const struct job *j, int64_t seq, char *buf, size_t size)
{
	if (seq > 0)
		snprintf(buf, size, "%lld.%lld.log", (long long)j->id, (long long)seq);
	else
		snprintf(buf, size, "%lld.log", (long long)j->id);
}

void jobs_log_path(struct server *s, const struct job *j, char *buf, size_t size)
{
	char name[64];

	jobs_log_name(j, jm(j)->log_seq, name, sizeof name);
	snprintf(buf, size, "%s/%s", jm(j)->log_dir ? jm(j)->log_dir : s->paths.log_dir, name);
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
	long long mine = 0;

	for (int64_t i = s->max_id; i > 0; i--) {
		struct job *j = s->jobs[i];

		if (j && j->uid == uid && mine++ == back)
			return i;
	}
	if (mine)
		return gf_err_set(e, "'%s' names no job: you have %lld job%s", ref, mine, mine == 1 ? "" : "s");
	return gf_err_set(e, "'%s' names no job: you have no jobs yet", ref);
}

/* ---- dependencies ------------------------------------------------------ */

int64_t jobs_latest_attempt(struct server *s, int64_t id)
{
	struct job *j;

	while ((j = jobs_get(s, id)) && jr(j)->retried_by)
		id = jr(j)->retried_by;
	return id;
}

/* 1: satisfied, 0: still possible, -1: can never be satisfied (*culprit). */
int jobs_deps_state(struct server *s, const struct job *j, int64_t *culprit)
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

/* How a job's priority counts across users (the scheduler's first key): a
 * priority an admin set counts as it is; one a user set counts only between
 * the default priority (10) and [daemon] max_user_priority (by default 10:
 * not at all). Beyond that it orders only the user's own jobs (sched.h:
 * own_priority). A personal daemon has one user: its priorities count as
 * they are. */
int jobs_cross_priority(const struct server *s, const struct job *j)
{
	int hi = s->cfg.max_user_priority, lo = hi < 10 ? hi : 10;

	if (!s->opts.system || j->priority_by_admin)
		return j->priority;
	return j->priority < lo ? lo : j->priority > hi ? hi : j->priority;
}

const char *jobs_blocked_reason(struct server *s, const struct job *j, double now)
{
	if (j->active)
		return "Preempted";	/* requeued: its last run's processes are not all gone yet */
	if (j->ndeps && jobs_deps_state(s, j, NULL) != 1)
		return "Dependency";
	if (jm(j)->begin_at > now)
		return "BeginTime";
	return NULL;
}

void jobs_end_now(struct job *j, enum job_state st, const char *reason)
{
	j->state = st;
	job_set_reason(j, reason);
	j->end_time = now_real();
}


void jobs_compact(struct server *s)
{
	compact_open(s);
	compact_live(s);
}
