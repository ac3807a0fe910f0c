/* sched.c — the pure scheduler pass (see sched.h for the policy). */
#include "sched.h"
#include "preempt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 64

/* A small open-addressing map from group id to running count. */
struct groups {
	int64_t *keys;
	int *counts;
	size_t cap, used;
};

static void groups_init(struct groups *g, size_t n)
{
	g->used = 0;
	g->cap = 16;
	while (g->cap < n * 2)
		g->cap *= 2;
	g->keys = calloc(g->cap, sizeof *g->keys);
	g->counts = calloc(g->cap, sizeof *g->counts);
	if (!g->keys || !g->counts)
		abort();
}

static size_t groups_find(const struct groups *g, int64_t key)
{
	size_t i = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL) & (g->cap - 1);

	while (g->keys[i] && g->keys[i] != key)
		i = (i + 1) & (g->cap - 1);
	return i;
}

/* Running jobs of a group; 0 for a group not seen. */
static int groups_count(const struct groups *g, int64_t key)
{
	return g->counts[groups_find(g, key)];
}

/* One more running job in a group. Grows the table at half full, so a
 * probe always ends. */
static void groups_add(struct groups *g, int64_t key)
{
	size_t i = groups_find(g, key);

	if (!g->keys[i]) {
		if (++g->used * 2 > g->cap) {
			struct groups big = { .cap = g->cap * 2 };

			big.keys = calloc(big.cap, sizeof *big.keys);
			big.counts = calloc(big.cap, sizeof *big.counts);
			if (!big.keys || !big.counts)
				abort();
			for (size_t k = 0; k < g->cap; k++)
				if (g->keys[k]) {
					size_t j = groups_find(&big, g->keys[k]);

					big.keys[j] = g->keys[k];
					big.counts[j] = g->counts[k];
				}
			big.used = g->used;
			free(g->keys);
			free(g->counts);
			*g = big;
			i = groups_find(g, key);
		}
		g->keys[i] = key;
	}
	g->counts[i]++;
}

struct state {
	const struct sched_input *in;
	struct sched_gpu gpus[MAX_GPUS];
	size_t ngpus;
	int order[MAX_GPUS];	/* candidate order for this pass (strategy) */
	int64_t mem_used;
	int64_t cpus_used;
	/* The running set including jobs started in this pass, for reservations. */
	struct sched_running *run;
	size_t nrun;
	struct sched_quota *q;	/* the subjects, counting this pass's starts */
	int whole_free;		/* usable GPUs with no job on them */
	int preempt_gpus;	/* GPUs of running preemptible jobs not claimed yet */
};

static void count_whole_free(struct state *st)
{
	st->whole_free = 0;
	for (size_t i = 0; i < st->ngpus; i++)
		st->whole_free += st->gpus[i].usable && !st->gpus[i].exclusive && !st->gpus[i].nshared;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x2545F4914F6CDD1DULL;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void make_order(struct state *st)
{
	uint64_t seed = st->in->seed;

	for (size_t i = 0; i < st->ngpus; i++)
		st->order[i] = (int)i;
	if (st->in->strategy != SCHED_RANDOM)
		return;
	for (size_t i = st->ngpus; i > 1; i--) {
		size_t k = xorshift(&seed) % i;
		int t = st->order[i - 1];

		st->order[i - 1] = st->order[k];
		st->order[k] = t;
	}
}

/* Scheduling order: priority (higher first), usage (lower first), id
 * (lower first). An LSD radix sort on keys made once per job: linear in the
 * queue, and byte positions where every key agrees cost nothing. The ids are
 * sorted on only when the input does not already list them in order (the
 * sort is stable). The order comes out as a list: *head is the first job's
 * index in in->jobs, next[i] the one after job i, LIST_END after the last. */
#define LIST_END UINT32_MAX

struct sort_key {
	uint64_t id, usage;
	uint32_t prio, idx;
};

static uint64_t usage_key(double u)
{
	uint64_t b;

	if (u == 0)
		u = 0;	/* -0.0 and 0.0 are the same usage */
	memcpy(&b, &u, sizeof b);
	return b >> 63 ? ~b : b | 1ULL << 63;
}

/* Byte `pass` of the key, least significant first: id, usage, priority. */
static unsigned key_byte(const struct sort_key *k, int pass)
{
	if (pass < 8)
		return (unsigned)(k->id >> (8 * pass)) & 0xff;
	if (pass < 16)
		return (unsigned)(k->usage >> (8 * (pass - 8))) & 0xff;
	return (unsigned)(k->prio >> (8 * (pass - 16))) & 0xff;
}

/* Whether a user's own priorities reorder anything (order_own): seen in
 * the walk that sorts, so that the queue is read once for both. */
struct own_seen {
	bool same;	/* every job has the first one's own priority */
	bool as_prio;	/* every job's own priority is its priority */
};

static void own_see(struct own_seen *o, const struct sched_job *jobs, const struct sched_job *j)
{
	o->same &= j->own_priority == jobs[0].own_priority;
	o->as_prio &= j->own_priority == j->priority;
}

static void sort_jobs(const struct sched_input *in, uint32_t *next, uint32_t *head, struct own_seen *own)
{
	size_t n = in->njobs, count[256];
	struct sort_key *a = malloc(2 * n * sizeof *a), *b = a + n, *base = a;
	struct sort_key diff = { 0, 0, 0, 0 };
	bool ids_sorted = true;

	if (!a)
		abort();
	*own = (struct own_seen){ true, true };
	for (size_t i = 0; i < n; i++) {
		const struct sched_job *j = &in->jobs[i];

		own_see(own, in->jobs, j);
		a[i] = (struct sort_key){
			.id = (uint64_t)j->id ^ 1ULL << 63,
			.usage = usage_key(j->usage),
			.prio = ~((uint32_t)j->priority ^ 1U << 31),
			.idx = (uint32_t)i,
		};
		diff.id |= a[i].id ^ a[0].id;
		diff.usage |= a[i].usage ^ a[0].usage;
		diff.prio |= a[i].prio ^ a[0].prio;
		if (i && j->id < in->jobs[i - 1].id)
			ids_sorted = false;
	}
	for (int p = ids_sorted ? 8 : 0; p < 20; p++) {
		size_t at = 0;
		struct sort_key *t;

		if (!key_byte(&diff, p))
			continue;	/* every key has the same byte here */
		memset(count, 0, sizeof count);
		for (size_t i = 0; i < n; i++)
			count[key_byte(&a[i], p)]++;
		for (int v = 0; v < 256; v++) {
			size_t c = count[v];

			count[v] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[key_byte(&a[i], p)]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	*head = a[0].idx;
	for (size_t i = 0; i + 1 < n; i++)
		next[a[i].idx] = a[i + 1].idx;
	next[a[n - 1].idx] = LIST_END;
	free(base);
}

/* The common queue: ids in order and one usage for all (fair share off or
 * idle), priorities within PRIO_SPAN/2 of the first job's. Then one walk
 * over the queue links each job to the end of its priority's list, and the
 * lists joined from the highest priority down are the order. Returns false
 * for any other queue, having linked nothing that counts. */
#define PRIO_SPAN 1024

static bool sort_by_priority(const struct sched_input *in, uint32_t *next, uint32_t *head, struct own_seen *own)
{
	const struct sched_job *jobs = in->jobs;
	uint32_t first[PRIO_SPAN], last[PRIO_SPAN], tail = LIST_END;
	int64_t base = (int64_t)jobs[0].priority - PRIO_SPAN / 2;
	int hi = PRIO_SPAN / 2, lo = hi;
	double u = jobs[0].usage;

	first[hi] = LIST_END;
	*own = (struct own_seen){ true, true };
	for (size_t i = 0; i < in->njobs; i++) {
		const struct sched_job *j = &jobs[i];
		int64_t b = (int64_t)j->priority - base;

		if ((i && j->id < j[-1].id) || j->usage != u || b < 0 || b >= PRIO_SPAN)
			return false;
		own_see(own, jobs, j);
		if (b > hi) {
			for (int v = hi + 1; v <= b; v++)
				first[v] = LIST_END;
			hi = (int)b;
		}
		if (b < lo) {
			for (int v = (int)b; v < lo; v++)
				first[v] = LIST_END;
			lo = (int)b;
		}
		if (first[b] == LIST_END)
			first[b] = (uint32_t)i;
		else
			next[last[b]] = (uint32_t)i;
		last[b] = (uint32_t)i;
	}
	for (int v = lo; v <= hi; v++)
		if (first[v] != LIST_END) {
			next[last[v]] = tail;
			tail = first[v];
		}
	*head = tail;
	return true;
}

/* A user's own priorities (sched.h): the places in the order that the jobs
 * of one uid and priority hold stay theirs, and those jobs take them by
 * own_priority (higher first), then id. Nothing moves when no such group
 * holds two own priorities: all the same, or each equal to its job's
 * priority (a personal daemon; users who set none). */
struct own_key {
	int64_t id;
	uint32_t uid, idx;
	int prio, own;
};

static int cmp_own(const void *a, const void *b)
{
	const struct own_key *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	if (x->own != y->own)
		return x->own > y->own ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static void order_own(const struct sched_input *in, uint32_t *next, uint32_t *head, const struct own_seen *own)
{
	const struct sched_job *jobs = in->jobs;
	size_t n = in->njobs, k = 0, g = 0;
	struct own_key *keys;
	uint32_t *group, *cursor, *seq;

	if (own->same || own->as_prio)
		return;
	keys = malloc(n * sizeof *keys);
	group = malloc(3 * n * sizeof *group);
	if (!keys || !group)
		abort();
	cursor = group + n;
	seq = cursor + n;
	for (size_t i = 0; i < n; i++)
		keys[i] = (struct own_key){ .id = jobs[i].id, .uid = jobs[i].uid, .idx = (uint32_t)i,
					    .prio = jobs[i].priority, .own = jobs[i].own_priority };
	qsort(keys, n, sizeof *keys, cmp_own);
	for (k = 0; k < n; k++) {
		if (!k || keys[k].uid != keys[k - 1].uid || keys[k].prio != keys[k - 1].prio)
			cursor[g = k] = (uint32_t)k;
		group[keys[k].idx] = (uint32_t)g;
	}
	/* the places in order; each taken by its group's next job */
	k = 0;
	for (uint32_t at = *head; at != LIST_END; at = next[at])
		seq[k++] = keys[cursor[group[at]]++].idx;
	*head = seq[0];
	for (k = 0; k + 1 < n; k++)
		next[seq[k]] = seq[k + 1];
	next[seq[n - 1]] = LIST_END;
	free(keys);
	free(group);
}

static bool gpu_fits(const struct sched_gpu *g, const struct sched_job *j)
{
	if (!g->usable || g->exclusive)
		return false;
	if (!j->shared)
		return g->nshared == 0;
	return g->booked_mb + g->foreign_mb + (uint64_t)j->gpu_memory_mb <= g->total_mb;
}

static int topo_level(const struct state *st, int a, int b)
{
	return st->in->topo ? st->in->topo[a * (int)st->ngpus + b] : 0;
}

/* Pick j->gpus slots (positions in st->gpus) or return 0. Slots in
 * `barred` are not taken; slots in `prefer` (reserved for the job's user
 * now) come first. */
static uint64_t pick_gpus(const struct state *st, const struct sched_job *j, uint64_t barred, uint64_t prefer)
{
	int cand[MAX_GPUS], n = 0, need = j->gpus;
	uint64_t best = 0;
	int best_score = 0;

	if (need <= 0)
		return 0;
	/* Shared jobs pack: GPUs that already host shared jobs come first. */
	for (int pref = prefer ? 0 : 1; pref < 2; pref++)
		for (int pass = 0; pass < (j->shared ? 2 : 1); pass++)
			for (size_t k = 0; k < st->ngpus; k++) {
				int slot = st->order[k];
				const struct sched_gpu *g = &st->gpus[slot];

				if (j->shared && (pass == 0) != (g->nshared > 0))
					continue;
				if ((barred >> slot) & 1 || (prefer && ((prefer >> slot) & 1) != (pref == 0)))
					continue;
				if (gpu_fits(g, j))
					cand[n++] = slot;
			}
	if (n < need)
		return 0;
	if (need == 1 || !st->in->topo) {
		for (int i = 0; i < need; i++)
			best |= 1ULL << cand[i];
		return best;
	}
	/* Several GPUs with topology known: for each seed GPU take its closest
	 * candidates; keep the set whose worst link is best. */
	for (int s = 0; s < n; s++) {
		int picked[MAX_GPUS], np = 1, score = 0;
		bool used[MAX_GPUS] = { false };
		uint64_t mask = 1ULL << cand[s];

		picked[0] = cand[s];
		used[s] = true;
		while (np < need) {
			int bi = -1, bl = 0;

			for (int i = 0; i < n; i++) {
				int l = topo_level(st, cand[s], cand[i]);

				if (!used[i] && (bi < 0 || l < bl)) {
					bi = i;
					bl = l;
				}
			}
			used[bi] = true;
			picked[np++] = cand[bi];
			mask |= 1ULL << cand[bi];
		}
		for (int a = 0; a < np; a++)
			for (int b = a + 1; b < np; b++)
				if (topo_level(st, picked[a], picked[b]) > score)
					score = topo_level(st, picked[a], picked[b]);
		if (!best || score < best_score) {
			best = mask;
			best_score = score;
		}
	}
	return best;
}

static bool mem_fits(const struct state *st, const struct sched_job *j)
{
	return !st->in->mem_total_mb || !j->memory_mb ||
	       st->mem_used + j->memory_mb <= st->in->mem_total_mb;
}

static bool cpus_fit(const struct state *st, const struct sched_job *j)
{
	return !st->in->cpus_total || st->cpus_used + j->cpus <= st->in->cpus_total;
}

static uint64_t slots_to_physical(const struct state *st, uint64_t slots)
{
	uint64_t phys = 0;

	for (size_t i = 0; i < st->ngpus; i++)
		if (slots & (1ULL << i))
			phys |= 1ULL << st->gpus[i].index;
	return phys;
}

static uint64_t physical_to_slots(const struct state *st, uint64_t phys)
{
	uint64_t slots = 0;

	for (size_t i = 0; i < st->ngpus; i++)
		if (phys & (1ULL << st->gpus[i].index))
			slots |= 1ULL << i;
	return slots;
}

/* The subject a job names (1-based), or NULL. */
static struct sched_quota *subject(const struct state *st, int i)
{
	return i >= 1 && (size_t)i <= st->in->nquotas ? &st->q[i - 1] : NULL;
}

/* Would j keep its user's and its project's quotas? Else d says which. */
static bool quota_ok(const struct state *st, const struct sched_job *j, struct sched_decision *d)
{
	int idx[2] = { j->user_quota, j->project_quota };

	for (int k = 0; k < 2; k++) {
		const struct sched_quota *q = subject(st, idx[k]);
		enum sched_limit lim = LIM_NONE;

		if (!q)
			continue;
		if (q->max_jobs >= 0 && q->running_jobs + 1 > q->max_jobs)
			lim = LIM_JOBS;
		else if (j->gpus && q->max_gpus >= 0 && q->running_gpus + j->gpus > q->max_gpus)
			lim = LIM_GPUS;
		else if (j->gpus && q->day_used_up)
			lim = LIM_GPU_HOURS;
		if (lim != LIM_NONE) {
			d->quota = idx[k];
			d->limit = lim;
			return false;
		}
	}
	return true;
}

/* Slots j may not take for a reservation of another user (*resv: the
 * one ending last of them, *until: its end), and slots reserved for j's
 * user now (*prefer). */
static uint64_t barred_slots(const struct state *st, const struct sched_job *j, int64_t *resv, double *until,
			     uint64_t *prefer)
{
	const struct sched_input *in = st->in;
	double end = in->now + (j->time_limit_secs ? (double)j->time_limit_secs : in->no_limit_horizon);
	uint64_t barred = 0;

	*prefer = 0;
	*resv = 0;
	*until = 0;
	for (size_t i = 0; i < in->nresvs; i++) {
		const struct sched_resv *r = &in->resvs[i];

		if (r->end <= in->now)
			continue;
		if (r->uid == j->uid) {
			if (r->start <= in->now)
				*prefer |= physical_to_slots(st, r->gpu_mask);
			continue;
		}
		if (r->start >= end)
			continue;	/* the job ends before it begins */
		barred |= physical_to_slots(st, r->gpu_mask);
		if (r->end > *until) {
			*until = r->end;
			*resv = r->id;
		}
	}
	return barred;
}

static void take(struct state *st, const struct sched_job *j, uint64_t slots)
{
	struct sched_quota *uq = subject(st, j->user_quota), *pq = subject(st, j->project_quota);

	if (j->preemptible) {	/* beyond the quotas, within its own limit */
		if (uq)
			uq->running_preempt_gpus += j->gpus;
		uq = pq = NULL;
	}
	if (uq) {
		uq->running_jobs++;
		uq->running_gpus += j->gpus;
	}
	if (pq && pq != uq) {
		pq->running_jobs++;
		pq->running_gpus += j->gpus;
	}
	for (size_t i = 0; i < st->ngpus; i++) {
		if (!(slots & (1ULL << i)))
			continue;
		if (j->shared) {
			st->gpus[i].nshared++;
			st->gpus[i].booked_mb += (uint64_t)j->gpu_memory_mb;
		} else
			st->gpus[i].exclusive = true;
	}
	st->mem_used += j->memory_mb;
	st->cpus_used += j->cpus;
	count_whole_free(st);
	st->run[st->nrun++] = (struct sched_running){
		.gpu_mask = slots_to_physical(st, slots),
		.memory_mb = j->memory_mb,
		.cpus = j->cpus,
		.end_by = j->time_limit_secs ? st->in->now + (double)j->time_limit_secs : 0,
		.group_id = j->group_id,
		.id = j->id,
		.start = st->in->now,
		.uid = j->uid,
		.preemptible = j->preemptible,
		.shared = j->shared,
	};
}

/* ---- preemption --------------------------------------------------------- */

static void add_victim(const struct state *st, int64_t id)
{
	struct sched_preempt *p = st->in->preempt;

	if (p)	/* NULL: the claims hold all the same, nobody is told */
		p->victims[p->nvictims++] = id;
}

/* A normal exclusive job kept off by GPUs: when running preemptible jobs
 * hold enough of them, it claims the free GPUs it needs (nothing else of
 * the pass takes them) and the fewest, newest of those jobs are preempted.
 * claimed[i]: st->run[i] is spoken for by an earlier job of the pass. */
static void claim_by_preemption(struct state *st, const struct sched_job *j, uint64_t barred, bool *claimed)
{
	const struct sched_input *in = st->in;
	struct preempt_cand *c = malloc((in->nrunning + 1) * sizeof *c);
	size_t *at = malloc((in->nrunning + 1) * sizeof *at);
	int64_t *out = malloc((in->nrunning + 1) * sizeof *out);
	size_t n = 0, nv;
	int free_now = 0, need = j->gpus;
	bool met;

	if (!c || !at || !out)
		abort();
	for (size_t i = 0; i < st->ngpus; i++)
		if (st->gpus[i].usable && !st->gpus[i].exclusive && !st->gpus[i].nshared && !(barred & (1ULL << i)))
			free_now++;
	for (size_t i = 0; i < in->nrunning; i++) {
		const struct sched_running *r = &st->run[i];
		uint64_t slots = physical_to_slots(st, r->gpu_mask) & ~barred;
		int g = 0;

		if (!r->preemptible || r->shared || claimed[i] || !slots)
			continue;
		for (size_t k = 0; k < st->ngpus; k++)
			g += (slots >> k & 1) && st->gpus[k].usable;
		c[n] = (struct preempt_cand){ .id = r->id, .start = r->start, .gpus = g, .preempting = r->preempting };
		at[n++] = i;
	}
	nv = preempt_choose(need, free_now, c, n, out, &met);
	if (met && n) {
		for (size_t k = 0; k < n; k++) {
			bool chosen = c[k].preempting;

			for (size_t v = 0; v < nv && !chosen; v++)
				chosen = out[v] == c[k].id;
			if (chosen) {
				claimed[at[k]] = true;
				need -= c[k].gpus;
				st->preempt_gpus -= c[k].gpus;
			}
		}
		for (size_t v = 0; v < nv; v++)
			add_victim(st, out[v]);
		/* The free GPUs it will start on, kept for it. */
		for (size_t i = 0; i < st->ngpus && need > 0; i++)
			if (st->gpus[i].usable && !st->gpus[i].exclusive && !st->gpus[i].nshared &&
			    !(barred & (1ULL << i))) {
				st->gpus[i].exclusive = true;
				need--;
			}
		count_whole_free(st);
	}
	free(c);
	free(at);
	free(out);
}

/* Preemptible jobs of other users on GPUs of a reservation that has begun
 * give them back. */
static void reservations_preempt(struct state *st, bool *claimed)
{
	const struct sched_input *in = st->in;

	for (size_t r = 0; r < in->nresvs; r++) {
		const struct sched_resv *v = &in->resvs[r];

		if (v->start > in->now || v->end <= in->now)
			continue;
		for (size_t i = 0; i < in->nrunning; i++) {
			const struct sched_running *x = &st->run[i];

			if (!x->preemptible || claimed[i] || x->uid == v->uid || !(x->gpu_mask & v->gpu_mask))
				continue;
			claimed[i] = true;
			st->preempt_gpus -= __builtin_popcountll(x->gpu_mask);
			if (!x->preempting)
				add_victim(st, x->id);
		}
	}
}

/* The user's max_preemptible_gpus (only that: preemptible jobs are beyond
 * the other quotas). */
static bool preempt_quota_ok(const struct state *st, const struct sched_job *j, struct sched_decision *d)
{
	const struct sched_quota *q = subject(st, j->user_quota);

	if (!q || q->max_preempt_gpus < 0 || q->running_preempt_gpus + j->gpus <= q->max_preempt_gpus)
		return true;
	d->quota = j->user_quota;
	d->limit = LIM_PREEMPT_GPUS;
	return false;
}

static int cmp_end(const void *a, const void *b)
{
	double x = ((const struct sched_running *)a)->end_by;
	double y = ((const struct sched_running *)b)->end_by;

	return (x > y) - (x < y);
}

/* The reservation of a blocked job: when it can start (INFINITY if never by
 * what we know) and what it leaves over then. Counts whole GPUs. */
struct reservation {
	double at;
	int extra_gpus;
	int64_t extra_mem;
	int64_t extra_cpus;
};

static struct reservation reserve(const struct state *st, const struct sched_job *j)
{
	struct reservation r = { INFINITY, 0, 0, 0 };
	struct sched_running *ends = malloc((st->nrun + 1) * sizeof *ends);
	int free_now = 0;
	int64_t mem_free = st->in->mem_total_mb ? st->in->mem_total_mb - st->mem_used : INT64_MAX / 4;
	int64_t cpus = st->in->cpus_total ? st->in->cpus_total - st->cpus_used : INT64_MAX / 4;
	const int64_t cpus_now = cpus;
	uint64_t held = 0;
	size_t n = 0;

	if (!ends)
		abort();
	for (size_t i = 0; i < st->ngpus; i++)
		if (st->gpus[i].usable && !st->gpus[i].exclusive && !st->gpus[i].nshared)
			free_now++;
	for (size_t i = 0; i < st->nrun; i++)
		if (st->run[i].end_by > 0)
			ends[n++] = st->run[i];
		else
			held |= physical_to_slots(st, st->run[i].gpu_mask);
	if (n)
		qsort(ends, n, sizeof *ends, cmp_end);

	int free_gpus = free_now;
	int64_t mem = mem_free;
	uint64_t freed = 0;

	for (size_t i = 0; i <= n; i++) {
		if (free_gpus >= j->gpus && (!j->memory_mb || mem >= j->memory_mb) && cpus >= j->cpus) {
			r.at = i == 0 ? st->in->now : ends[i - 1].end_by;
			r.extra_gpus = free_gpus - j->gpus;
			r.extra_mem = mem - j->memory_mb;
			r.extra_cpus = cpus - j->cpus;
			break;
		}
		if (i == n) {
			/* No known time: nothing is promised to it but the
			 * CPUs it needs of those free now (CPU-only work goes
			 * on beside a job that waits for GPUs; CPUs not
			 * counted are never short). */
			r.extra_cpus = cpus_now > j->cpus ? cpus_now - j->cpus : 0;
			break;
		}
		/* A GPU frees when the last job on it ends (shared GPUs may hold
		 * several), and only if it is usable at all. */
		uint64_t slots = physical_to_slots(st, ends[i].gpu_mask);

		mem += ends[i].memory_mb;
		cpus += ends[i].cpus;
		for (size_t s = 0; s < st->ngpus; s++) {
			bool still = false;

			if (!(slots & (1ULL << s)) || (freed & (1ULL << s)) || (held & (1ULL << s)) ||
			    !st->gpus[s].usable)
				continue;
			for (size_t k = i + 1; k < n && !still; k++)
				still = physical_to_slots(st, ends[k].gpu_mask) & (1ULL << s);
			if (!still) {
				freed |= 1ULL << s;
				free_gpus++;
			}
		}
	}
	free(ends);
	return r;
}

/* One preemptible job, after every normal one. */
static bool place_preemptible(struct state *st, const struct sched_job *j, struct groups *groups,
			      struct sched_decision *d)
{
	const struct sched_input *in = st->in;
	uint64_t slots = 0, barred = 0, prefer = 0;
	int64_t resv_id = 0;
	double until = 0;

	*d = (struct sched_decision){ .id = j->id };
	if (j->blocked) {
		d->reason = j->blocked;
		return false;
	}
	if (j->group_id && j->group_cap && groups_count(groups, j->group_id) >= j->group_cap) {
		d->reason = "Resources";
		d->limit = LIM_GROUP;
		return false;
	}
	if (in->nquotas && !preempt_quota_ok(st, j, d)) {
		d->reason = "Quota";
		return false;
	}
	if (j->gpus) {
		/* Only reservations that have begun keep it off: it gives the
		 * GPUs back when one begins. */
		struct sched_job now_only = *j;

		now_only.time_limit_secs = 0;
		barred = barred_slots(st, &now_only, &resv_id, &until, &prefer);
		for (size_t r = 0; r < in->nresvs; r++)
			if (in->resvs[r].start > in->now && in->resvs[r].uid != j->uid)
				barred &= ~physical_to_slots(st, in->resvs[r].gpu_mask);
		for (size_t r = 0; r < in->nresvs; r++)
			if (in->resvs[r].start <= in->now && in->resvs[r].end > in->now && in->resvs[r].uid != j->uid)
				barred |= physical_to_slots(st, in->resvs[r].gpu_mask);
	}
	if (!mem_fits(st, j) || !cpus_fit(st, j) || (j->gpus && !(slots = pick_gpus(st, j, barred, prefer)))) {
		d->reason = "Resources";
		if (!cpus_fit(st, j)) {
			d->limit = LIM_CPUS;
			d->cpus_busy = (int)st->cpus_used;
		}
		return false;
	}
	take(st, j, slots);
	if (j->group_id)
		groups_add(groups, j->group_id);
	d->gpu_mask = slots_to_physical(st, slots);
	return true;
}

size_t sched_pass(const struct sched_input *in, struct sched_decision *out)
{
	struct state st = { .in = in };
	uint32_t *next, at = LIST_END;
	struct groups groups;
	struct reservation resv = { 0, 0, 0, 0 };
	struct own_seen own = { true, true };
	bool reserved = false;
	size_t started = 0, o = 0, ndefer = 0;
	uint32_t *defer;
	bool *claimed;

	st.ngpus = in->ngpus > MAX_GPUS ? MAX_GPUS : in->ngpus;
	if (st.ngpus)
		memcpy(st.gpus, in->gpus, st.ngpus * sizeof *st.gpus);
	make_order(&st);
	count_whole_free(&st);
	st.run = malloc((in->nrunning + in->njobs + 1) * sizeof *st.run);
	next = malloc((in->njobs + 1) * sizeof *next);
	st.q = malloc((in->nquotas + 1) * sizeof *st.q);
	defer = malloc((in->njobs + 1) * sizeof *defer);
	claimed = calloc(in->nrunning + 1, sizeof *claimed);
	if (!st.run || !next || !st.q || !defer || !claimed)
		abort();
	if (in->nquotas)
		memcpy(st.q, in->quotas, in->nquotas * sizeof *st.q);
	if (in->nrunning)
		memcpy(st.run, in->running, in->nrunning * sizeof *st.run);
	st.nrun = in->nrunning;
	groups_init(&groups, in->nrunning + 16);
	for (size_t i = 0; i < in->nrunning; i++) {
		if (in->running[i].preemptible && !in->running[i].shared)
			st.preempt_gpus += __builtin_popcountll(in->running[i].gpu_mask);
		st.mem_used += in->running[i].memory_mb;
		st.cpus_used += in->running[i].cpus;
		if (in->running[i].group_id)
			groups_add(&groups, in->running[i].group_id);
	}
	if (in->njobs && !sort_by_priority(in, next, &at, &own))
		sort_jobs(in, next, &at, &own);
	if (in->njobs)
		order_own(in, next, &at, &own);

	reservations_preempt(&st, claimed);
	for (size_t i = 0; i < in->njobs; i++, at = next[at]) {
		const struct sched_job *j = &in->jobs[at];
		struct sched_decision *d;

		if (j->preemptible) {
			defer[ndefer++] = at;
			continue;
		}
		d = &out[o++];
		uint64_t slots = 0, barred, prefer = 0;
		int64_t resv_id = 0;
		double until = 0;
		bool fits;

		*d = (struct sched_decision){ .id = j->id };
		if (j->blocked) {
			d->reason = j->blocked;
			continue;
		}
		if (j->group_id && j->group_cap && groups_count(&groups, j->group_id) >= j->group_cap) {
			d->reason = "Resources";
			d->limit = LIM_GROUP;
			continue;
		}
		if (in->nquotas && !quota_ok(&st, j, d)) {
			d->reason = "Quota";
			continue;
		}
		/* An exclusive job wanting more GPUs than are free cannot start,
		 * whatever reservations say: no need to look at each GPU. */
		if (!j->shared && j->gpus > st.whole_free) {
			barred = 0;
			fits = false;
		} else {
			barred = j->gpus ? barred_slots(&st, j, &resv_id, &until, &prefer) : 0;
			fits = mem_fits(&st, j) && cpus_fit(&st, j) && (j->gpus == 0 || (slots = pick_gpus(&st, j, barred, prefer)));
		}
		if (!fits && barred && mem_fits(&st, j) && cpus_fit(&st, j) && pick_gpus(&st, j, 0, 0)) {
			/* Only another user's reservation keeps it off. */
			d->reason = "Reservation";
			d->resv_id = resv_id;
			d->expected_start = until;
			continue;
		}
		if (!fits && st.preempt_gpus > 0 && !j->shared && j->gpus > 0 && j->gpus <= st.whole_free + st.preempt_gpus &&
		    mem_fits(&st, j) && cpus_fit(&st, j))
			claim_by_preemption(&st, j, barred_slots(&st, j, &resv_id, &until, &prefer), claimed);
		if (!fits) {
			d->reason = "Resources";
			if (!cpus_fit(&st, j)) {
				d->limit = LIM_CPUS;
				d->cpus_busy = (int)st.cpus_used;
			}
			if (!reserved && !j->shared) {
				resv = reserve(&st, j);
				reserved = true;
				d->expected_start = isfinite(resv.at) ? resv.at : 0;
				d->reserves = true;
				d->resv_extra_gpus = resv.extra_gpus;
				d->resv_extra_mem = resv.extra_mem;
				d->resv_extra_cpus = resv.extra_cpus;
			}
			continue;
		}
		if (reserved) {
			bool ends_before = j->time_limit_secs && in->now + (double)j->time_limit_secs <= resv.at;
			bool leftover = j->gpus <= resv.extra_gpus && j->memory_mb <= resv.extra_mem &&
					j->cpus <= resv.extra_cpus;

			if (!ends_before && !leftover) {
				d->reason = "Priority";
				continue;
			}
			if (!ends_before) {
				resv.extra_gpus -= j->gpus;
				resv.extra_mem -= j->memory_mb;
				resv.extra_cpus -= j->cpus;
			}
		}
		take(&st, j, slots);
		if (j->group_id)
			groups_add(&groups, j->group_id);
		d->reason = NULL;
		d->gpu_mask = slots_to_physical(&st, slots);
		started++;
	}
	for (size_t i = 0; i < ndefer; i++)
		started += place_preemptible(&st, &in->jobs[defer[i]], &groups, &out[o++]);
	free(defer);
	free(claimed);
	free(groups.keys);
	free(groups.counts);
	free(next);
	free(st.run);
	free(st.q);
	return started;
}
