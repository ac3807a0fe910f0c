/* engine.h — the engine layer (src/daemon/engine/): every transition of a
 * job (jobs.c: cancel, hold, release, end, retry; the scheduler pass),
 * submissions (submit.c) and dependency cascades (cascade.c). The one
 * place that decides what happens to jobs. May call: share, run, store,
 * state, gpu, core, common. */
#ifndef GF_ENGINE_H
#define GF_ENGINE_H

#include "share.h"

/* jobs.c — loading, every transition of a job, the scheduler pass */
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
/* The last process of an ended job is gone: its resources go back. */
int jobs_freed(struct server *s, struct job *j);
/* The scheduler pass: build input, run sched_pass, start jobs. */
/* One scheduler pass; false when it was skipped because nothing it looks
 * at changed since the last one. */
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
