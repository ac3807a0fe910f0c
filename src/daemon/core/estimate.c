/* estimate.c — expected starts by driving sched_pass() forward in
 * simulated time (see estimate.h). */
#include "estimate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct idref {
	int64_t id;
	long ref;		/* >= 0: waiting job; < 0: running job -ref-1 */
};

static int cmp_idref(const void *a, const void *b)
{
	int64_t x = ((const struct idref *)a)->id, y = ((const struct idref *)b)->id;

	return (x > y) - (x < y);
}

/* A running job of the simulation: the pass's view and what it gives back. */
struct sim_run {
	double end;		/* INFINITY: not known */
	int64_t id;
	int gpus, uq, pq;
	bool shared;
	int64_t gmem;
};

struct sim {
	const struct sched_est_input *e;
	const struct sched_input *in;
	struct sched_estimate *out;
	struct idref *ids;
	size_t nids;
	struct sched_running *run;
	struct sim_run *rx;
	size_t nrun;
	struct sched_gpu *gpus;
	struct sched_quota *q;
};

static const struct idref *lookup(const struct sim *m, int64_t id)
{
	struct idref key = { .id = id };

	return m->nids ? bsearch(&key, m->ids, m->nids, sizeof key, cmp_idref) : NULL;
}

/* When a parent ends: NAN while not known yet (a waiting job not yet
 * placed), INFINITY when never by what we know. */
static double parent_end(const struct sim *m, int64_t id)
{
	const struct idref *r = lookup(m, id);

	if (!r)
		return INFINITY;	/* held, or not ours */
	if (r->ref < 0) {
		const struct sched_est_running *x = &m->e->running[-r->ref - 1];

		return x->end > 0 ? x->end : INFINITY;
	}
	if (m->out[r->ref].start > 0)
		return m->out[r->ref].end > 0 ? m->out[r->ref].end : INFINITY;
	return NAN;
}

/* When job i may be looked at: NAN not known yet, INFINITY never. */
static double ready_at(const struct sim *m, size_t i)
{
	const struct sched_est_job *x;
	double at = 0, any = INFINITY;
	bool unknown = false;

	if (!m->in->jobs[i].blocked)
		return 0;
	if (!m->e->jobs)
		return INFINITY;
	x = &m->e->jobs[i];
	for (size_t k = 0; k < x->ndeps; k++) {
		double p = parent_end(m, x->deps[k]);

		if (isnan(p))
			unknown = true;
		else if (x->dep_any)
			any = p < any ? p : any;
		else if (p > at)
			at = p;
	}
	if (x->dep_any && x->ndeps) {
		if (unknown && !isfinite(any))
			return NAN;
		at = any;
	} else if (unknown)
		return NAN;
	return x->begin_at > at ? x->begin_at : at;
}

static void count(struct sched_quota *q, size_t nq, int idx, int jobs, int gpus)
{
	if (idx >= 1 && (size_t)idx <= nq) {
		q[idx - 1].running_jobs += jobs;
		q[idx - 1].running_gpus += gpus;
	}
}

static void hold_gpus(struct sim *m, uint64_t mask, bool shared, int64_t gmem, int sign)
{
	for (size_t k = 0; k < m->in->ngpus; k++) {
		struct sched_gpu *g = &m->gpus[k];

		if (g->index < 0 || g->index >= 64 || !((mask >> g->index) & 1))
			continue;
		if (!shared)
			g->exclusive = sign > 0;
		else if (sign > 0) {
			g->nshared++;
			g->booked_mb += (uint64_t)gmem;
		} else {
			g->nshared -= g->nshared > 0;
			g->booked_mb -= g->booked_mb >= (uint64_t)gmem ? (uint64_t)gmem : g->booked_mb;
		}
	}
}

/* Running jobs that have ended by t give back what they held. */
static void end_until(struct sim *m, double t)
{
	size_t k = 0;

	for (size_t i = 0; i < m->nrun; i++) {
		struct sim_run *x = &m->rx[i];

		if (x->end > t) {
			m->run[k] = m->run[i];
			m->rx[k++] = *x;
			continue;
		}
		hold_gpus(m, m->run[i].gpu_mask, x->shared, x->gmem, -1);
		count(m->q, m->in->nquotas, x->uq, -1, -x->gpus);
		if (x->pq != x->uq)
			count(m->q, m->in->nquotas, x->pq, -1, -x->gpus);
	}
	m->nrun = k;
}

size_t sched_estimate(const struct sched_est_input *e, struct sched_estimate *out)
{
	const struct sched_input *in = e->in;
	size_t n = in->njobs, nr = in->nrunning, rem = 0, placed = 0, steps = 0, work = 0;
	double horizon = in->now + (e->horizon > 0 ? e->horizon : EST_HORIZON), t = in->now;
	size_t max_steps = e->max_steps ? e->max_steps : EST_MAX_STEPS;
	size_t max_work = e->max_work ? e->max_work : EST_MAX_WORK;
	struct sim m = { .e = e, .in = in, .out = out };
	struct sched_job *jobs = malloc((n + 1) * sizeof *jobs);
	size_t *orig = malloc((n + 1) * sizeof *orig);
	struct sched_decision *d = malloc((n + 1) * sizeof *d);
	bool capped = false;

	m.ids = malloc((n + nr + 1) * sizeof *m.ids);
	m.run = malloc((n + nr + 1) * sizeof *m.run);
	m.rx = malloc((n + nr + 1) * sizeof *m.rx);
	m.gpus = malloc((in->ngpus + 1) * sizeof *m.gpus);
	m.q = malloc((in->nquotas + 1) * sizeof *m.q);
	if (!jobs || !orig || !d || !m.ids || !m.run || !m.rx || !m.gpus || !m.q)
		abort();
	if (in->ngpus)
		memcpy(m.gpus, in->gpus, in->ngpus * sizeof *m.gpus);
	if (in->nquotas)
		memcpy(m.q, in->quotas, in->nquotas * sizeof *m.q);
	for (size_t i = 0; i < n; i++) {
		out[i] = (struct sched_estimate){ .id = in->jobs[i].id, .why = EST_NO_END };
		jobs[i] = in->jobs[i];
		orig[i] = i;
		m.ids[m.nids++] = (struct idref){ .id = in->jobs[i].id, .ref = (long)i };
	}
	rem = n;
	for (size_t i = 0; i < nr; i++) {
		const struct sched_est_running *x = e->running ? &e->running[i] : NULL;
		double end = x ? x->end : in->running[i].end_by;

		m.run[i] = in->running[i];
		m.rx[i] = (struct sim_run){ .end = end > 0 ? end : INFINITY, .uq = x ? x->user_quota : 0,
					    .pq = x ? x->project_quota : 0, .gpus = x ? x->gpus : 0,
					    .shared = x && x->shared, .gmem = x ? x->gpu_memory_mb : 0,
					    .id = x ? x->id : 0 };
		if (x && x->id)
			m.ids[m.nids++] = (struct idref){ .id = x->id, .ref = -(long)i - 1 };
	}
	m.nrun = nr;
	qsort(m.ids, m.nids, sizeof *m.ids, cmp_idref);

	while (rem) {
		struct sched_input sin = *in;
		double next = INFINITY;
		size_t k = 0;

		/* What may be looked at now; the first step is the pass's own. */
		for (size_t i = 0; i < rem && steps; i++)
			if (in->jobs[orig[i]].blocked) {
				double at = ready_at(&m, orig[i]);

				jobs[i].blocked = !isnan(at) && at <= t ? NULL : in->jobs[orig[i]].blocked;
			}
		sin.jobs = jobs;
		sin.njobs = rem;
		sin.running = m.run;
		sin.nrunning = m.nrun;
		sin.gpus = m.gpus;
		sin.quotas = m.q;
		sin.now = t;
		if (sched_pass(&sin, d)) {
			for (size_t i = 0; i < rem; i++) {
				const struct idref *r;
				const struct sched_job *j;
				struct sched_estimate *o;
				double end;

				if (d[i].reason || !(r = lookup(&m, d[i].id)) || r->ref < 0)
					continue;
				j = &in->jobs[r->ref];
				o = &out[r->ref];
				end = j->time_limit_secs ? t + (double)j->time_limit_secs
					: e->default_runtime > 0 ? t + e->default_runtime : 0;
				*o = (struct sched_estimate){ .id = j->id, .start = t, .end = end,
							      .gpu_mask = d[i].gpu_mask, .why = EST_KNOWN };
				m.run[m.nrun] = (struct sched_running){
					.gpu_mask = d[i].gpu_mask, .memory_mb = j->memory_mb, .cpus = j->cpus,
					.end_by = j->time_limit_secs ? t + (double)j->time_limit_secs : 0,
					.group_id = j->group_id,
				};
				m.rx[m.nrun++] = (struct sim_run){ .end = end > 0 ? end : INFINITY, .id = j->id,
								   .gpus = j->gpus, .uq = j->user_quota,
								   .pq = j->project_quota, .shared = j->shared,
								   .gmem = j->gpu_memory_mb };
				hold_gpus(&m, d[i].gpu_mask, j->shared, j->gpu_memory_mb, 1);
				count(m.q, in->nquotas, j->user_quota, 1, j->gpus);
				if (j->project_quota != j->user_quota)
					count(m.q, in->nquotas, j->project_quota, 1, j->gpus);
				placed++;
			}
			for (size_t i = 0; i < rem; i++)
				if (out[orig[i]].why != EST_KNOWN) {
					jobs[k] = jobs[i];
					orig[k++] = orig[i];
				}
			rem = k;
		}
		work += rem + m.nrun;
		steps++;
		if (!rem)
			break;
		/* The next event: an end, a reservation's edge, a job ready. */
		for (size_t i = 0; i < m.nrun; i++)
			if (m.rx[i].end < next)
				next = m.rx[i].end;
		if (next < t)
			next = t;	/* overdue: it ends any moment */
		for (size_t i = 0; i < in->nresvs; i++) {
			if (in->resvs[i].start > t && in->resvs[i].start < next)
				next = in->resvs[i].start;
			if (in->resvs[i].end > t && in->resvs[i].end < next)
				next = in->resvs[i].end;
		}
		for (size_t i = 0; i < rem; i++)
			if (jobs[i].blocked) {
				double at = ready_at(&m, orig[i]);

				if (!isnan(at) && at > t && at < next)
					next = at;
			}
		if (!isfinite(next))
			break;
		if (next > horizon || steps >= max_steps || work >= max_work) {
			capped = true;
			break;
		}
		t = next;
		end_until(&m, t);
	}
	for (size_t i = 0; i < rem && capped; i++)
		out[orig[i]].why = EST_CAP;
	free(jobs);
	free(orig);
	free(d);
	free(m.ids);
	free(m.run);
	free(m.rx);
	free(m.gpus);
	free(m.q);
	return placed;
}
