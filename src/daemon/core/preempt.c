/* preempt.c — choosing the preemptible jobs to stop (preempt.h). */
#include "preempt.h"

#include <stdlib.h>

static int cmp_newest(const void *a, const void *b)
{
	const struct preempt_cand *x = *(const struct preempt_cand *const *)a;
	const struct preempt_cand *y = *(const struct preempt_cand *const *)b;

	if (x->start != y->start)
		return x->start < y->start ? 1 : -1;	/* newest first */
	return (x->id < y->id) - (x->id > y->id);	/* then the higher id */
}

static int cmp_int_desc(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x < y) - (x > y);
}

/* The most GPUs k of v[from..n) can free (v sorted newest first; their
 * GPU counts sorted into tmp). */
static long best_of(const struct preempt_cand *const *v, size_t from, size_t n, size_t k, int *tmp)
{
	size_t m = 0;
	long sum = 0;

	for (size_t i = from; i < n; i++)
		tmp[m++] = v[i]->gpus;
	qsort(tmp, m, sizeof *tmp, cmp_int_desc);
	for (size_t i = 0; i < k && i < m; i++)
		sum += tmp[i];
	return sum;
}

size_t preempt_choose(int need, int free_now, const struct preempt_cand *c, size_t n, int64_t *out, bool *met)
{
	const struct preempt_cand **v = malloc((n + 1) * sizeof *v);
	int *tmp = malloc((n + 1) * sizeof *tmp);
	long have = free_now > 0 ? free_now : 0, all = 0, deficit;
	size_t m = 0, k, chosen = 0;

	if (!v || !tmp)
		abort();
	*met = false;
	for (size_t i = 0; i < n; i++) {
		if (c[i].gpus <= 0)
			continue;
		if (c[i].preempting)
			have += c[i].gpus;
		else {
			v[m++] = &c[i];
			all += c[i].gpus;
		}
	}
	deficit = (long)need - have;
	if (deficit <= 0) {
		*met = true;
		goto out;
	}
	if (all < deficit)
		goto out;	/* even all of them would not do */
	qsort(v, m, sizeof *v, cmp_newest);
	/* The fewest: the smallest k whose k biggest jobs make the deficit. */
	for (k = 1; k <= m && best_of(v, 0, m, k, tmp) < deficit; k++)
		;
	/* Among k jobs, the newest: take each in turn, newest first, when
	 * the rest can still be made up by the jobs after it. */
	for (size_t i = 0; i < m && chosen < k && deficit > 0; i++) {
		long left = deficit - v[i]->gpus;

		if (left <= 0 || (chosen + 1 < k && best_of(v, i + 1, m, k - chosen - 1, tmp) >= left)) {
			out[chosen++] = v[i]->id;
			deficit = left;
		}
	}
	*met = deficit <= 0;
out:
	free(v);
	free(tmp);
	return *met ? chosen : 0;
}
