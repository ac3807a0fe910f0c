/* engine.h — the engine layer (src/daemon/engine/): every transition of a
 * job (jobs.c: cancel, hold, release, end, retry), the scheduler pass
 * (pass.c), submissions (submit.c), preemption (preempt.c) and dependency
 * cascades (cascade.c). The one place that decides what happens to jobs.
 * May call: share, run, store, state, gpu, core, common. */
#ifndef GF_ENGINE_H
#define GF_ENGINE_H

#include "share.h"

/* jobs.c — loading, every transition of a job */
int jobs_load(struct server *s, struct gf_err *e);
/* Cancel these jobs (each Queued, Hold or Running) in one transaction,
 * running ones signalled after it. Their dependents follow through the
 * cascade queue; `done` (may be NULL) is called when that is through,
 * perhaps before this returns. -1: nothing changed, done is not called. */
int jobs_cancel_many(struct server *s, const int64_t *ids, size_t n, const char *reason, jobs_done_cb done,
		     void *arg, struct gf_err *e);
/* Inside a transaction; -1 with e set when the job's state forbids it. */
int jobs_hold(struct server *s, struct job *j, struct gf_err *e);
int jobs_release(struct server *s, struct job *j, double at, struct gf_err *e);
/* A runner reported its result (or vanished: r == NULL, why set). 0 when
 * recorded; -1 when the store refused it, memory then as before the call
 * (the caller tries again later). */
int jobs_ended(struct server *s, struct job *j, const struct job_result *r, const char *why);
/* The same, recorded by the next pass together with the other ends that
 * came meanwhile and the starts they make room for (jobs.c). */
int jobs_end_later(struct server *s, struct job *j, const struct job_result *r, const char *why);
/* Ends still queued, recorded (a stop: nothing is started). */
void jobs_close_ends(struct server *s);
/* For the pass (pass.c): every queued end, in a transaction opened here
 * for the caller to commit with the starts they make room for (-1: the
 * store refused it, and jobs_ends_refused was called); after that commit
 * is synced, the ends answered and acted on; a refused commit's ends left
 * to the backstop, the transaction rolled back. */
int jobs_ends_begin(struct server *s);
void jobs_ends_committed(struct server *s);
void jobs_ends_refused(struct server *s, const struct gf_err *e);
/* The last process of an ended job is gone: its resources go back. */
int jobs_freed(struct server *s, struct job *j);
/* pass.c — the scheduler pass: build its input, run sched_pass, start
 * jobs. One pass; false when it was skipped because nothing it looks at
 * changed since the last one. */
bool jobs_schedule_pass(struct server *s);
/* In a submission's open transaction: record as started the jobs that can
 * start now, so one commit holds both; jobs_launch_recorded after the
 * commit launches them. */
void jobs_start_at_once(struct server *s);
void jobs_launch_recorded(struct server *s);
/* The expected start of a queued job (estimate.h), worked out for the whole
 * queue on demand and kept until the next commit (or 5 s); NULL for a job
 * that is not queued. */
const struct sched_estimate *jobs_expected(struct server *s, int64_t id);
void jobs_expected_close(struct server *s);
/* submit.c: store a submission's n jobs (taken: jobs[i] set to NULL) with
 * their environment in one transaction, ids[i] their ids; what can start
 * at once is recorded as started. *launch_after: launch it with
 * jobs_launch_recorded once the answer is on its way. -1: nothing stored. */
int jobs_submit(struct server *s, struct job **jobs, size_t n, const char *env, size_t envlen, int64_t *ids,
		bool *launch_after, struct gf_err *e);
/* Can the machine ever run this job? -1 with e set when it cannot. */
int jobs_check_feasible(struct server *s, const struct job *j, struct gf_err *e);
/* preempt.c — preemption (gbatch --preemptible; idle reclaim's requeue).
 * Preempt a running job: in its own transaction it is marked as being
 * preempted (kept in the store: a daemon restart finishes it), then its
 * runner sends the job its --signal (TERM for a job that did not ask for
 * preemption), and SIGKILL after its grace (--signal's SECS; the daemon's
 * kill grace for such a job). When its last process is gone (jobs_ended)
 * it is queued again under the same id (requeue: reason Preempted,
 * requeues + 1, $GFLOW_RESTART_COUNT) or cancelled. `why` goes to the
 * daemon's log. 0 when it is under way (or was already); -1 with e set
 * when the job is not running or the store refused. */
int jobs_preempt(struct server *s, struct job *j, bool requeue, const char *why, struct gf_err *e);
/* In jobs_ended's transaction: the end of a job being preempted. */
void preempt_ended(struct server *s, struct job *j, const struct job_result *r);
/* The victims of a scheduler pass, preempted (each in its own commit). */
void preempt_victims(struct server *s, const int64_t *ids, size_t n);

/* cascade.c — working through the cascade queue (its data: deps.c).
 * Inside a transaction: work through the queue for at most one slice. */
void cascade_work(struct server *s);
/* After a commit: answer the requests whose cascade is through, go on with
 * the rest in a later loop turn. */
void cascade_after(struct server *s);
/* One slice of the queue, in its own transaction. */
void cascade_slice(struct server *s);
/* At shutdown: answer requests waiting for a cascade, free the queue. */
void jobs_close(struct server *s);

#endif
