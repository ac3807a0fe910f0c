/* preempt.c — preempting running jobs (engine.h): the mark, the signal
 * through the runner, and the requeue or cancel once the job's last
 * process is gone. Which jobs: core/preempt.c, through sched_pass. */
#include "engine.h"

#include "verbose.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

int jobs_preempt(struct server *s, struct job *j, bool requeue, const char *why, struct gf_err *e)
{
	struct job_more *m;

	if (j->state != JS_RUNNING || !j->active)
		return gf_err_set(e, "job %lld is %s: only running jobs can be preempted", (long long)j->id,
				  job_state_name(j->state));
	if (jm(j)->cluster)
		return gf_err_set(e, "job %lld runs on a Slurm cluster: gflow cannot preempt it", (long long)j->id);
	if (jm(j)->preempt_since > 0 || jr(j)->end_queued)
		return 0;	/* under way, or it ended: its end is recorded in the next pass */
	if (jobs_txn_begin(s, e))
		return -1;
	jobs_touch(s, j);
	m = jm_w(j);
	m->preempt_since = now_real();
	if (requeue)
		m->preempt &= ~(int64_t)PJ_END_CANCEL;
	else
		m->preempt |= PJ_END_CANCEL;
	if (!m->preempt_sig)
		m->preempt_sig = SIGTERM;
	if (jobs_save(s, j, e) || jobs_txn_commit(s, e)) {
		jobs_txn_rollback(s);
		return -1;
	}
	/* Committed: now the runner is told (attach() tells a runner not
	 * seen yet, and a daemon restart tells it again). */
	reap_preempt(s, j);
	vlog(1, "job %lld preempted (%s): %s when its processes are gone", (long long)j->id, why ? why : "",
	     requeue ? "queued again" : "cancelled");
	hooks_fire(s, GF_EV_JOB_EVENT, &(struct gf_ev_job_event){ j, "job_preempted" });
	return 0;
}

void preempt_ended(struct server *s, struct job *j, const struct job_result *r)
{
	struct job_more *m = jm_w(j);
	bool cancel = m->preempt & PJ_END_CANCEL;

	(void)s;
	m->preempt_since = 0;
	m->preempt &= ~(int64_t)PJ_END_CANCEL;
	if (cancel) {
		j->end_time = r && r->end > 0 ? r->end : now_real();
		if (r) {
			j->has_exit = true;
			j->exit_code = r->exited ? r->exit_code : 0;
			j->exit_signal = r->exited ? 0 : r->signal;
		}
		j->state = JS_CANCELLED;
		job_set_reason(j, "Preempted");
		return;
	}
	/* The same job waits again; what its run used is counted (usage_stage
	 * reads start_time to end_time) and then forgotten by the next start. */
	j->end_time = r && r->end > 0 ? r->end : now_real();
	j->state = JS_QUEUED;
	job_set_reason(j, "Preempted");
	m->requeues++;
	j->has_exit = false;
	j->exit_code = j->exit_signal = 0;
}

void preempt_victims(struct server *s, const int64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs_get(s, ids[i]);
		struct gf_err e;

		if (!j || !job_preemptible(jm(j)) || j->state != JS_RUNNING)
			continue;	/* never a normal job */
		if (jobs_preempt(s, j, !(jm(j)->preempt & PJ_MODE_CANCEL), "its GPUs are needed", &e))
			fprintf(stderr, "gflowd: preempting job %lld: %s (trying again)\n", (long long)j->id, e.msg);
	}
}
