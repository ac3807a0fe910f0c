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

/* Would sched_pass() move a user's jobs by own_priority (sched.c,
 * order_own)? Not when all are the same, or each equals its priority; then
 * the order of any subset of the queue is the order of the whole, kept. */
/* Would sched_pass() move a user's jobs by own_priority (sched.c,
 * order_own)? Not when all are the same, or each equals its priority; then
 * the order of any subset of the queue is the order of the whole, kept. */
static bool own_moves(const struct sched_input *in)
{
	bool same = true, as_prio = true;

	for (size_t i = 0; i < in->njobs && (same || as_prio); i++) {
		same &= in->jobs[i].own_priority == in->jobs[0].own_priority;
		as_prio &= in->jobs[i].own_priority == in->jobs[i].priority;
	}
	return !(same || as_prio);
}

/* Job ref starts at t on mask: its estimate, and what it holds from now. */
static void place(struct sim *m, size_t ref, double t, uint64_t mask)
{
	const struct sched_job *j = &m->in->jobs[ref];
	double end = j->time_limit_secs ? t + (double)j->time_limit_secs
		     : m->e->default_runtime > 0 ? t + m->e->default_runtime : 0;

	m->out[ref] = (struct sched_estimate){ .id = j->id, .start = t, .end = end, .gpu_mask = mask,
					       .why = EST_KNOWN };
	m->run[m->nrun] = (struct sched_running){
		.gpu_mask = mask, .memory_mb = j->memory_mb, .cpus = j->cpus,
		.end_by = j->time_limit_secs ? t + (double)j->time_limit_secs : 0, .group_id = j->group_id,
	};
	m->rx[m->nrun++] = (struct sim_run){ .end = end > 0 ? end : INFINITY, .id = j->id, .gpus = j->gpus,
					     .uq = j->user_quota, .pq = j->project_quota, .shared = j->shared,
					     .gmem = j->gpu_memory_mb };
	hold_gpus(m, mask, j->shared, j->gpu_memory_mb, 1);
	count(m->q, m->in->nquotas, j->user_quota, 1, j->gpus);
	if (j->project_quota != j->user_quota)
		count(m->q, m->in->nquotas, j->project_quota, 1, j->gpus);
}

/* The next event after t: an end, a reservation's edge, a blocked job
 * (of bl[0..nb), by index of in->jobs, those placed skipped) ready. */
static double next_event(const struct sim *m, double t, const size_t *bl, size_t nb)
{
	double next = INFINITY;

	for (size_t i = 0; i < m->nrun; i++)
		if (m->rx[i].end < next)
			next = m->rx[i].end;
	if (next < t)
		next = t;	/* overdue: it ends any moment */
	for (size_t i = 0; i < m->in->nresvs; i++) {
		if (m->in->resvs[i].start > t && m->in->resvs[i].start < next)
			next = m->in->resvs[i].start;
		if (m->in->resvs[i].end > t && m->in->resvs[i].end < next)
			next = m->in->resvs[i].end;
	}
	for (size_t i = 0; i < nb; i++)
		if (m->out[bl[i]].why != EST_KNOWN) {
			double at = ready_at(m, bl[i]);

			if (!isnan(at) && at > t && at < next)
				next = at;
		}
	return next;
}

/* ---- the queue in the pass's order, and where a job may still start ----
 *
 * After the first step the waiting jobs stay in the order sched_pass()
 * gave them (places 0..n): their priorities and usage do not change, and
 * without own priorities that move jobs (own_moves) the order of any part
 * of the queue is the order of the whole. A segment tree over the places
 * answers "the first place from s on whose job may start", by what it
 * must have for that (below), so a step looks at the head of the queue
 * and at those only, not at all of it. */
struct seg {
	size_t size;		/* leaves: a power of two, >= places */
	int g;			/* GPU classes 1..g */
	int32_t *lim;		/* [node * g + c - 1]: least time limit (s) of an exclusive
				 * job with at most c GPUs (c == g: any number); INT32_MAX
				 * none (a longer one counts as INT32_MAX - 1) */
	int *min_gpus;		/* least GPUs of any job (INT32_MAX: none) */
	int *min_excl;		/* least GPUs of an exclusive job with GPUs */
	bool *other;		/* a shared or GPU-less job */
};

static void seg_leaf(struct seg *t, size_t p, const struct sched_job *j)
{
	size_t v = t->size + p;
	bool other = j && (j->shared || j->gpus <= 0);

	t->other[v] = other;
	t->min_gpus[v] = j ? (j->gpus > 0 ? j->gpus : 0) : INT32_MAX;
	t->min_excl[v] = j && !other ? j->gpus : INT32_MAX;
	for (int c = 1; c <= t->g; c++)
		t->lim[v * (size_t)t->g + (size_t)c - 1] =
			j && !other && j->time_limit_secs > 0 && (j->gpus <= c || c == t->g)
				? (int32_t)(j->time_limit_secs < INT32_MAX ? j->time_limit_secs : INT32_MAX - 1)
				: INT32_MAX;
}

static void seg_pull(struct seg *t, size_t v)
{
	size_t a = 2 * v, b = 2 * v + 1;

	t->other[v] = t->other[a] || t->other[b];
	t->min_gpus[v] = t->min_gpus[a] < t->min_gpus[b] ? t->min_gpus[a] : t->min_gpus[b];
	t->min_excl[v] = t->min_excl[a] < t->min_excl[b] ? t->min_excl[a] : t->min_excl[b];
	for (size_t c = 0; c < (size_t)t->g; c++) {
		int32_t x = t->lim[a * (size_t)t->g + c], y = t->lim[b * (size_t)t->g + c];

		t->lim[v * (size_t)t->g + c] = x < y ? x : y;
	}
}

static void seg_init(struct seg *t, const struct sched_job *jobs, size_t n, size_t ngpus)
{
	t->size = 1;
	while (t->size < n + 1)
		t->size *= 2;
	t->g = ngpus < 1 ? 1 : ngpus > 8 ? 8 : (int)ngpus;
	t->lim = malloc(2 * t->size * (size_t)t->g * sizeof *t->lim);
	t->min_gpus = malloc(2 * t->size * sizeof *t->min_gpus);
	t->min_excl = malloc(2 * t->size * sizeof *t->min_excl);
	t->other = malloc(2 * t->size * sizeof *t->other);
	if (!t->lim || !t->min_gpus || !t->min_excl || !t->other)
		abort();
	for (size_t p = 0; p < t->size; p++)
		seg_leaf(t, p, p < n ? &jobs[p] : NULL);
	for (size_t v = t->size; v-- > 1;)
		seg_pull(t, v);
}

static void seg_remove(struct seg *t, size_t p)
{
	seg_leaf(t, p, NULL);
	for (size_t v = (t->size + p) / 2; v; v /= 2)
		seg_pull(t, v);
}

static void seg_free(struct seg *t)
{
	free(t->lim);
	free(t->min_gpus);
	free(t->min_excl);
	free(t->other);
}

/* What a job past the part of the queue looked at needs to start in this
 * pass: GPUs (wf whole ones free: an exclusive job wants at most wf), and
 * once the backfill reservation is made (resv), to end within lim seconds
 * or fit in what it leaves (xg GPUs). */
struct want {
	int wf;
	bool resv;
	double lim;
	int64_t xg;
};

static bool seg_may(const struct seg *t, size_t v, const struct want *w)
{
	int32_t l;

	if (t->other[v])
		return true;
	if (t->min_excl[v] > w->wf)
		return false;
	if (!w->resv)
		return true;
	if (t->min_gpus[v] <= w->xg)
		return true;
	if (w->wf < 1)
		return false;
	l = t->lim[v * (size_t)t->g + (size_t)(w->wf < t->g ? w->wf : t->g) - 1];
	/* (a second of room: the leaf is judged exactly as the pass does) */
	return l < INT32_MAX && (double)l <= w->lim + 1;
}

/* The first place >= s whose node says it may start; t->size: none. */
static size_t seg_first(const struct seg *t, size_t v, size_t lo, size_t hi, size_t s, const struct want *w)
{
	size_t mid, r;

	if (hi <= s || !seg_may(t, v, w))
		return t->size;
	if (hi - lo == 1)
		return lo;
	mid = lo + (hi - lo) / 2;
	r = seg_first(t, 2 * v, lo, mid, s, w);
	return r < t->size ? r : seg_first(t, 2 * v + 1, mid, hi, s, w);
}

/* pj[k] = job for the pass, numbered k + 1 of one priority and no usage,
 * so that sched_pass() keeps the order it is given; at[k] = its place. */
static void put(struct sched_job *pj, size_t *at, size_t k, const struct sched_job *job, size_t place)
{
	pj[k] = *job;
	pj[k].id = (int64_t)k + 1;
	pj[k].priority = pj[k].own_priority = 0;
	pj[k].usage = 0;
	at[k] = place;
}

/* Usable GPUs with no job on them once the starts in d[0..n) hold theirs:
 * sched_pass()'s whole_free at the end of that pass (it only goes down). */
static int whole_free_after(const struct sim *m, const struct sched_decision *d, size_t n)
{
	uint64_t taken = 0;
	int wf = 0;

	for (size_t i = 0; i < n; i++)
		if (!d[i].reason)
			taken |= d[i].gpu_mask;
	for (size_t k = 0; k < m->in->ngpus; k++) {
		const struct sched_gpu *g = &m->gpus[k];

		wf += g->usable && !g->exclusive && !g->nshared &&
		      !(g->index >= 0 && g->index < 64 && ((taken >> g->index) & 1));
	}
	return wf;
}

/* The first place >= p still waiting (nxt: a union-find of places left). */
static size_t alive_from(size_t *nxt, size_t p)
{
	size_t r = p;

	while (nxt[r] != r)
		r = nxt[r];
	while (nxt[p] != r) {
		size_t x = nxt[p];

		nxt[p] = r;
		p = x;
	}
	return r;
}

#define PREFIX_FIRST 4
#define BATCH_FIRST 8

size_t sched_estimate(const struct sched_est_input *e, struct sched_estimate *out)
{
	const struct sched_input *in = e->in;
	size_t n = in->njobs, nr = in->nrunning, rem = 0, placed = 0, steps = 0, work = 0, nb = 0, np = 0;
	double horizon = in->now + (e->horizon > 0 ? e->horizon : EST_HORIZON), t = in->now;
	size_t max_steps = e->max_steps ? e->max_steps : EST_MAX_STEPS;
	size_t max_work = e->max_work ? e->max_work : EST_MAX_WORK;
	struct sim m = { .e = e, .in = in, .out = out };
	struct sched_job *jobs = malloc((n + 1) * sizeof *jobs), *pj = NULL;
	size_t *orig = malloc((n + 1) * sizeof *orig), *bl = malloc((n + 1) * sizeof *bl);
	size_t *at = NULL, *nxt = NULL, *placeof = malloc((n + 1) * sizeof *placeof);
	struct sched_decision *d = malloc((n + 1) * sizeof *d);
	struct seg sg = { 0 };
	bool capped = false, prefix = !e->full_passes && !own_moves(in);

	m.ids = malloc((n + nr + 1) * sizeof *m.ids);
	m.run = malloc((n + nr + 1) * sizeof *m.run);
	m.rx = malloc((n + nr + 1) * sizeof *m.rx);
	m.gpus = malloc((in->ngpus + 1) * sizeof *m.gpus);
	m.q = malloc((in->nquotas + 1) * sizeof *m.q);
	if (!jobs || !orig || !bl || !placeof || !d || !m.ids || !m.run || !m.rx || !m.gpus || !m.q)
		abort();
	if (in->ngpus)
		memcpy(m.gpus, in->gpus, in->ngpus * sizeof *m.gpus);
	if (in->nquotas)
		memcpy(m.q, in->quotas, in->nquotas * sizeof *m.q);
	for (size_t i = 0; i < n; i++) {
		out[i] = (struct sched_estimate){ .id = in->jobs[i].id, .why = EST_NO_END };
		jobs[i] = in->jobs[i];
		orig[i] = i;
		if (in->jobs[i].blocked)
			bl[nb++] = i;
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
	for (size_t i = 1; i < m.nids && prefix; i++)
		prefix = m.ids[i].id != m.ids[i - 1].id;	/* ids name places: one each */

	while (rem) {
		struct sched_input sin = *in;
		double next;
		size_t k = 0;

		sin.running = m.run;
		sin.nrunning = m.nrun;
		sin.gpus = m.gpus;
		sin.quotas = m.q;
		sin.now = t;
		if (!steps || !prefix) {
			/* The whole queue, as sched_pass() orders it; what may be
			 * looked at now (the first step is the pass's own). */
			for (size_t i = 0; i < rem && steps; i++)
				if (in->jobs[orig[i]].blocked) {
					double r = ready_at(&m, orig[i]);

					jobs[i].blocked = !isnan(r) && r <= t ? NULL : in->jobs[orig[i]].blocked;
				}
			sin.jobs = jobs;
			sin.njobs = rem;
			if (sched_pass(&sin, d))
				for (size_t i = 0; i < rem; i++) {
					const struct idref *r = d[i].reason ? NULL : lookup(&m, d[i].id);

					if (r && r->ref >= 0 && out[r->ref].why != EST_KNOWN) {
						place(&m, (size_t)r->ref, t, d[i].gpu_mask);
						placed++;
					}
				}
			work += rem;
			if (!steps && prefix) {
				/* The places: the waiting jobs in the pass's order. */
				for (size_t i = 0; i < rem; i++) {
					const struct idref *r = lookup(&m, d[i].id);

					if (r && r->ref >= 0 && out[r->ref].why != EST_KNOWN) {
						jobs[k] = in->jobs[r->ref];
						orig[k++] = (size_t)r->ref;
					}
				}
				np = k;
				pj = malloc((np + 1) * sizeof *pj);
				at = malloc((np + 1) * sizeof *at);
				nxt = malloc((np + 1) * sizeof *nxt);
				if (!pj || !at || !nxt)
					abort();
				for (size_t i = 0; i <= np; i++)
					nxt[i] = i;
				for (size_t i = 0; i < np; i++)
					placeof[orig[i]] = i;
				seg_init(&sg, jobs, np, in->ngpus);
			} else {
				for (size_t i = 0; i < rem; i++)
					if (out[orig[i]].why != EST_KNOWN) {
						jobs[k] = jobs[i];
						orig[k++] = orig[i];
					}
			}
			rem = k;
		} else {
			/* The head of the queue decides as the whole queue does
			 * (a pass decides each job from the ones before it); it
			 * grows until the backfill reservation is made or no
			 * job past it can have its GPUs (whole_free only goes
			 * down in a pass). Past it, only the jobs the tree says
			 * may start are added, a batch at a time, the pass run
			 * again over all of them in order. */
			size_t nd = 0, cur = alive_from(nxt, 0), want_n = PREFIX_FIRST, batch = BATCH_FIRST;
			const struct sched_decision *rv = NULL;
			struct want w = { 0 };
			double until;
			int64_t xg, xm, xc;

			for (size_t i = 0; i < nb; i++)	/* blocked: their time or parents came? */
				if (out[bl[i]].why != EST_KNOWN) {
					double r = ready_at(&m, bl[i]);

					jobs[placeof[bl[i]]].blocked = !isnan(r) && r <= t ? NULL : in->jobs[bl[i]].blocked;
				}
			for (;;) {
				while (nd < want_n && cur < np) {
					put(pj, at, nd++, &jobs[cur], cur);
					cur = alive_from(nxt, cur + 1);
				}
				sin.jobs = pj;
				sin.njobs = nd;
				sched_pass(&sin, d);
				work += nd;
				if (cur >= np)
					break;
				w.wf = whole_free_after(&m, d, nd);
				for (size_t i = 0; i < nd && !rv; i++)
					if (d[i].reserves)
						rv = &d[i];
				if (!rv) {
					w.resv = false;
					if (seg_first(&sg, 1, 0, sg.size, cur, &w) >= np)
						break;	/* none past it can have its GPUs */
					want_n = nd * 4;
					continue;
				}
				until = rv->expected_start > 0 ? rv->expected_start : INFINITY;
				/* What the reservation leaves once the jobs after it
				 * that started in what it leaves (not ending before
				 * it) took theirs, as the pass counts it. */
				xg = rv->resv_extra_gpus;
				xm = rv->resv_extra_mem;
				xc = rv->resv_extra_cpus;
				for (size_t i = (size_t)(rv - d) + 1; i < nd; i++)
					if (!d[i].reason &&
					    !(pj[i].time_limit_secs && t + (double)pj[i].time_limit_secs <= until)) {
						xg -= pj[i].gpus;
						xm -= pj[i].memory_mb;
						xc -= pj[i].cpus;
					}
				w = (struct want){ .wf = w.wf, .resv = true, .xg = xg, .lim = until - t };
				{
					size_t added = 0;

					while (added < batch) {
						size_t p = seg_first(&sg, 1, 0, sg.size, cur, &w);
						const struct sched_job *j;

						if (p >= np) {
							cur = np;
							break;
						}
						cur = p + 1;
						j = &jobs[p];
						if (j->blocked || (!j->shared && j->gpus > w.wf))
							continue;
						if ((j->time_limit_secs && t + (double)j->time_limit_secs <= until) ||
						    (j->gpus <= xg && j->memory_mb <= xm && j->cpus <= xc)) {
							put(pj, at, nd++, j, p);
							added++;
						}
					}
					if (!added)
						break;
					batch *= 2;
					want_n = nd;
					rv = NULL;	/* found again in the new decisions */
				}
			}
			for (size_t i = 0; i < nd; i++)
				if (!d[i].reason) {
					size_t p = at[d[i].id - 1];

					place(&m, orig[p], t, d[i].gpu_mask);
					placed++;
					rem--;
					nxt[p] = p + 1;
					seg_remove(&sg, p);
				}
		}
		steps++;
		work += nb;	/* the blocked jobs are looked at each step */
		if (!rem)
			break;
		next = next_event(&m, t, bl, nb);
		if (!isfinite(next))
			break;
		if (next > horizon || steps >= max_steps || work >= max_work) {
			capped = true;
			break;
		}
		t = next;
		end_until(&m, t);
	}
	for (size_t i = 0; i < n && capped; i++)
		if (out[i].why != EST_KNOWN)
			out[i].why = EST_CAP;
	free(jobs);
	free(orig);
	free(bl);
	free(placeof);
	free(d);
	free(pj);
	free(at);
	free(nxt);
	seg_free(&sg);
	free(m.ids);
	free(m.run);
	free(m.rx);
	free(m.gpus);
	free(m.q);
	return placed;
}
