/* preempt.h — which preemptible jobs to stop so that a waiting job can
 * start: a pure function (no I/O, no clock), used by sched_pass.
 *
 * Rules: only preemptible jobs are candidates (the caller passes no
 * other); jobs already being preempted count as freeing their GPUs, and
 * when they, with the free GPUs, are enough, nobody more is chosen; else
 * the fewest jobs whose GPUs make up the rest, and among as few, the
 * newest-started (then the highest id); nobody when even all of them would
 * not be enough. */
#ifndef GF_PREEMPT_H
#define GF_PREEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct preempt_cand {
	int64_t id;
	double start;		/* when it started */
	int gpus;		/* whole GPUs it frees */
	bool preempting;	/* already being preempted */
};

/* need: GPUs the waiting job needs; free_now: GPUs free for it now.
 * Writes the chosen ids into out (room for n) and returns how many; *met:
 * whether the need is met once they (and those being preempted) are gone. */
size_t preempt_choose(int need, int free_now, const struct preempt_cand *c, size_t n, int64_t *out, bool *met);

#endif
