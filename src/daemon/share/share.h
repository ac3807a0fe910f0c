/* share.h — the share layer (src/daemon/share/): who gets the GPUs.
 * gpustate.c (the GPU views the pass and ginfo see), quota.c (limits and
 * why a job waits), reserve.c (reservations), fairshare.c (decayed usage),
 * usage.c (what each job really uses), idle.c (idle reclaim). May call: run, store, state, gpu,
 * core, common. Changes the engine must act on go up as events
 * (GF_EV_CANCEL, GF_EV_GPUS, GF_EV_RESERVATION, GF_EV_JOB_EVENT). */
#ifndef GF_SHARE_H
#define GF_SHARE_H

#include "run.h"

/* usage.c — what each job really used on its GPUs */
void usage_start(struct server *s, struct job *j);	/* at start, in its transaction: GPU UUIDs */
void usage_clear(struct job *j);
/* MB the job's processes use on GPU g in the last snapshot (the usage
 * sampler's and idle reclaim's). */
uint64_t usage_job_mem_on(struct server *s, const struct job *j, size_t g);
/* After a new snapshot: each running job's GPU memory (by its processes)
 * and utilisation, recorded in one transaction; shared overuse flagged and
 * handled as [gpu] shared_overuse says. */
void usage_sample(struct server *s);

/* idle.c — idle reclaim ([gpu.idle_reclaim]): after each new snapshot,
 * each running job it applies to advances its idle clock (core/idle.h);
 * warned (log line, job_idle event), then acted on (cancel through
 * GF_EV_CANCEL). Clocks in memory only. */
bool idle_applies(struct server *s, const struct job *j);
void idle_sample(struct server *s);
void idle_close(struct server *s);
/* "idle_secs" and "idle_warned" of a running job being measured idle. */
void idle_annotate(struct server *s, const struct job *j, json_t *o);

/* gpustate.c — GPUs as the scheduler and ginfo see them */
int gpustate_init(struct server *s, struct gf_err *e);
void gpustate_close(struct server *s);
void gpustate_refresh(struct server *s);	/* recompute views from snapshot + jobs */
size_t gpustate_sched_gpus(struct server *s, struct sched_gpu *out);
size_t gpustate_count(struct server *s);	/* GPUs the machine has */
json_t *gpustate_json(struct server *s);
int gpustate_set_allowed(struct server *s, const char *spec, struct gf_err *e);
int gpustate_ignore(struct server *s, int gpu, pid_t pid, bool ignore, struct gf_err *e);
json_t *gpustate_ignored_json(struct server *s);

/* quota.c — quotas: overrides, effective limits, the pass's subjects,
 * refusal over max_queued_jobs, and why a job waits */
int quota_load(struct server *s, struct gf_err *e);	/* after the store is open */
void quota_close(struct server *s);
/* The limits that hold for a user or project (name NULL: the default). */
void quota_effective(struct server *s, bool project, const char *name, struct gf_quota *out);
/* Merge set fields into the override of key; remove it (*had: was there). */
int quota_set(struct server *s, const char *key, const struct gf_quota *q, struct gf_err *e);
int quota_remove(struct server *s, const char *key, bool *had, struct gf_err *e);
/* Would these n new waiting jobs break max_queued_jobs of a user or a
 * project of theirs? Then e names the limit. */
int quota_check_submit(struct server *s, struct job *const *jobs, size_t n, struct gf_err *e);
json_t *quota_list_json(struct server *s);
/* The pass's quota subjects: fills each queued job's indices (jobs[i] is
 * the job of q[i]); free the result with quota_subjects_free. */
struct quota_subjects;
struct quota_subjects *quota_subjects_build(struct server *s, struct sched_job *q, struct job **jobs, size_t nq,
					    double now);
const struct sched_quota *quota_subjects_array(const struct quota_subjects *qs, size_t *n);
void quota_subjects_free(struct quota_subjects *qs);
/* A running job's subjects in qs (1-based, as sched_job's user_quota and
 * project_quota; 0 none). */
void quota_subjects_of(const struct quota_subjects *qs, const struct job *j, int *uq, int *pq);
/* After the pass: remember why each waiting job waits. */
void quota_notes(struct server *s, const struct quota_subjects *qs, const struct sched_decision *d, size_t n);
/* The note of a queued job, or NULL. */
const struct wait_note *quota_note(struct server *s, int64_t id);
/* Add reason_detail / expected_start to a job's JSON (a queued job's note). */
void quota_annotate(struct server *s, const struct job *j, json_t *o);

/* reserve.c — reservations. A job without a time limit is taken to run
 * this long: it is not started on GPUs reserved for someone else within
 * the next hour. */
#define NO_LIMIT_HORIZON_SECS 3600.0
int reserve_load(struct server *s, struct gf_err *e);
void reserve_close(struct server *s);
/* The reservations the pass must know (not cancelled, not over); free. */
struct sched_resv *reserve_sched(struct server *s, double now, size_t *n);
/* The next start or end of a reservation after now (INFINITY: none). */
double reserve_next_edge(struct server *s, double now);
const struct reservation *reserve_get(struct server *s, int64_t id);
/* "Reservation: 3 for bob on GPU 1, 14:00-16:00 UTC" */
void reserve_describe(struct server *s, int64_t id, char *buf, size_t size);
/* 0 (r->id set); -2 when it clashes with another reservation; -1 for bad
 * input or a store error (store_full / "store:" say which). */
int reserve_create(struct server *s, struct reservation *r, struct gf_err *e);
int reserve_cancel(struct server *s, int64_t id, struct gf_err *e);
json_t *reserve_json(const struct reservation *r, double now);
const char *reserve_status(const struct reservation *r, double now);

/* fairshare.c — decayed GPU-seconds per user (fair share) */
int usage_load(struct server *s, struct gf_err *e);
void usage_close(struct server *s);
/* A user's decayed usage now, counting their running jobs so far. */
double usage_of(struct server *s, const char *user, double now);
/* Every user's usage now, for one pass (look up with usage_in). */
struct user_usage *usage_snapshot(struct server *s, double now, size_t *n);
double usage_in(const struct user_usage *v, size_t n, const char *user);
void usage_snapshot_free(struct user_usage *v, size_t n);
/* Inside the transaction that records j's end: add its run; applied to
 * memory by usage_commit after the commit, dropped by usage_drop. */
int usage_stage(struct server *s, const struct job *j, struct gf_err *e);
void usage_commit(struct server *s);
void usage_drop(struct server *s);
json_t *usage_json(struct server *s, double now);	/* {"user": GPU-seconds} */
/* GPU-seconds a user's or project's jobs ran in the last 24 h (ended runs
 * kept since the daemon started, from the job table; running ones so far). */
double usage_day_gpu_secs(struct server *s, bool project, const char *name, double now);
/* GPU-seconds a CPU-only job counts per second of run. */
#define USAGE_CPU_WEIGHT 0.05

#endif
