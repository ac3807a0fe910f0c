/* server.h — the state layer (src/daemon/state/) and the daemon's one
 * state object. All daemon state lives in `struct server`; everything runs
 * on its single libevent loop (only the NVML poller, gpu.c, and the
 * notification workers, notify.c, have threads of their own).
 *
 * The state layer owns the job table (table.c), the dependents index and
 * the cascade queue's data (deps.c), descriptors under pressure (fds.c),
 * the verbosity (verbose.c) and events up the layers (hooks.c, hooks.h).
 * May call: gpu, core, common. Each layer above has its header, which
 * includes the one below: core (job.h, jobw.h, sched.h) < gpu (gpu.h,
 * foreign.h) < state (this) < store (txn.h) < run (run.h) < share
 * (share.h) < engine (engine.h) < observe (observe.h) < api (api.h) <
 * main (main.h). tests/layers.py checks the calls from the objects. */
#ifndef GF_SERVER_H
#define GF_SERVER_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "config.h"
#include "err.h"
#include "gpu.h"
#include "foreign.h"
#include "hooks.h"
#include "job.h"
#include "paths.h"
#include "runfile.h"
#include "estimate.h"
#include "sched.h"
#include "store.h"

#define GFLOW_MAX_GPUS 64

struct notify;

struct ignored_proc {
	int gpu;
	pid_t pid;
};

/* Options given to `gflowd run` (and passed on by start/restart). */
struct daemon_opts {
	const char *config_path;
	const char *gpus;		/* --gpus SPEC */
	const char *strategy;		/* --gpu-allocation-strategy */
	int poll_interval;		/* --gpu-poll-interval-secs, 0 = config */
	const char *hosting;		/* how it was started, for status */
	const char *inherit;		/* --inherit UNIX,TCP,LOCK,SOCKLOCK: fds of the daemon we replace */
	const char *report;		/* --report PATH: our pid, then "ready" or why not (lifecycle.c) */
	const char *rollback;		/* --rollback FD: the replaced daemon's executable, run again
					 * (with its options, data/reload.undo) if we cannot start */
	bool check;			/* --check: validate the config and options, report, exit */
	bool system;			/* --system: the machine's daemon (root), jobs run as their owners */
	int verbosity;			/* -q: -1, -v…-vvvv: 1…4 (verbose.h) */
};

struct reload;			/* a reload being prepared or drained (loop.c) */

/* A compute process on a GPU that belongs to no job, named (foreign.c). */
/* The dashboard's history ring (history.c): samples of the last 24 hours,
 * oldest at head; also in the store. */
struct history {
	struct store_sample *ring;
	size_t head, n, cap;
	int interval;			/* seconds between samples */
	struct event *ev;
	bool failing;			/* the store refused the last sample (said once) */
};

/* A Prometheus histogram of durations in seconds (metrics.c); bucket[i]
 * counts the observations up to its bound (cumulative). */
#define METRICS_BUCKETS 12
struct histogram {
	uint64_t bucket[METRICS_BUCKETS];
	uint64_t count;
	double sum;
};

/* What the daemon knows about one GPU right now (gpustate.c). */
struct gpu_view {
	int index;
	bool allowed;
	bool down;
	bool exclusive;			/* held by an exclusive job */
	int nshared;
	uint64_t booked_mb, foreign_mb;
	struct foreign_proc foreign[16];	/* foreign compute processes, named */
	int nforeign;
	int nunmanaged;			/* of them, those that block the GPU */
	pid_t escaped[16];		/* job processes on a GPU their job was not given */
	int64_t escaped_job[16];
	int nescaped;
};

/* How the daemon knows a job's processes (track.c). */
enum track_method { TRACK_SESSION, TRACK_CGROUP2, TRACK_CGROUP1 };

struct seen_pid {
	pid_t pid;
	unsigned long long ticks;
	int64_t job;
};

/* A cgroup hierarchy: its mount point and mount root, and the daemon's
 * own group in it (as /proc/self/cgroup says). */
struct cg_hier {
	char mnt[GF_PATH_MAX], root[GF_PATH_MAX], own[GF_PATH_MAX];
};

struct tracker {
	enum track_method method;
	struct cg_hier h;		/* the tracking hierarchy */
	char ctl[16];			/* its v1 controller ("pids", "freezer") */
	char cg[GF_PATH_MAX];		/* this daemon's jobs directory in it */
	char freezer[GF_PATH_MAX];	/* v1 freezer jobs directory, "" none */
	char mem[GF_PATH_MAX];		/* where --memory is enforced, "" nowhere */
	bool mem_v1;
	char devices[GF_PATH_MAX];	/* v1 devices jobs directory ([gpu] constrain_devices), "" none */
	char devices_why[192];		/* when "": why devices are not constrained */
	uint8_t key[16];		/* of the session way's marker */
	struct seen_pid *seen;		/* session way: processes seen as a job's */
	size_t nseen, seen_cap;
};

/* A user's token for the TCP API (auth.c). */
struct user_token {
	uid_t uid;
	char token[64];
};

/* Fair use: a runtime quota override (quota.c); unset fields are
 * QUOTA_UNSET. Keys: "user:<name>", "project:<name>", "default_user",
 * "default_project". */
#define QUOTA_UNSET INT64_MIN
struct quota_override {
	char *key;
	struct gf_quota q;
};

/* GPUs kept for one user in [start, end) (reserve.c). */
struct reservation {
	int64_t id;
	uid_t uid;
	char *user;
	uint64_t gpu_mask;		/* physical indices */
	int ngpus;			/* as asked (--gpus N), or the spec's count */
	bool by_count;			/* --gpus N: GPUs picked at creation */
	double start, end, created;
	bool cancelled;
};

/* A user's decayed usage in GPU-seconds, as of `at` (usage.c). */
struct user_usage {
	char *user;
	double value, at;
};

/* A runner's end, waiting for the next pass to record it (engine/jobs.c). */
struct queued_end {
	int64_t id, run_seq;
	bool has_result;
	struct job_result result;
	char *why;
};

/* A GPU job's run that ended within the last 24 h, for
 * max_gpu_hours_per_day (usage.c). */
struct recent_run {
	double start, end;
	int gpus;
	char *user, *project;
};

/* What holds a queued job back, for `gjob show` (quota.c; rebuilt by each
 * pass, in id order, only for jobs with more to say than their reason).
 * Compact: the words are made when a job is shown. */
enum note_kind { NOTE_QUOTA, NOTE_RESERVATION, NOTE_GROUP, NOTE_RESOURCES, NOTE_CPUS /* value: CPUs busy */ };
struct wait_note {
	int64_t id;
	double expected_start;		/* 0 = not known */
	int64_t value;			/* the quota limit, or the batch cap */
	int64_t ref;			/* reservation id, or batch id */
	int32_t subject;		/* quota: index into server.note_names */
	uint8_t kind;			/* enum note_kind */
	uint8_t limit;			/* quota: enum sched_limit */
};

struct server {
	struct event_base *base;
	struct gf_paths paths;
	struct gf_config cfg;
	struct daemon_opts opts;
	struct store *store;
	double started_at;
	int lock_fd;
	char exe_dir[GF_PATH_MAX];
	char runner_path[GF_PATH_MAX];
	char token[80];			/* the daemon's own (personal mode: acts as its user) */
	struct user_token *tokens;	/* per-user tokens (auth.c) */
	size_t ntokens;
	gid_t admin_gid;		/* [daemon] admin_group, when have_admin_gid */
	bool have_admin_gid;
	uid_t uid;
	enum job_executor executor;
	int64_t mem_total_mb;
	int cpus_total;			/* [daemon] cpus, or the daemon's affinity (cpus.c) */
	int *cpu_list;			/* the CPUs jobs are pinned to (constrain_cpus), cpus_total of them */

	/* Jobs, indexed by id (ids are dense from 1). */
	struct job **jobs;
	int64_t njobs_cap;
	int64_t max_id;
	/* The submit-time index (GET /jobs?since=, GET /stats?since=):
	 * since_max[b] is the latest submit time of the jobs whose ids are in
	 * block b (b * JOBS_SINCE_BLOCK on), so a walk of the jobs submitted
	 * since T passes over every block whose latest is before T: it costs
	 * the blocks (a thousand for a million jobs) and the jobs of the blocks
	 * it enters. Ids grow with time; a job that does not (a clock set
	 * back) makes its own block entered, nothing more. */
	double *since_max;
	size_t nsince, since_cap;
	/* Ids of the jobs that are not over (not ended, or still holding
	 * resources), ascending: what the scheduler and GPU views walk, so their
	 * cost follows the live jobs, not all jobs ever stored. Entries of jobs
	 * that have since closed are dropped at each pass. */
	int64_t *open;
	size_t nopen, open_cap;
	size_t open_closed;		/* jobs closed since open was last compacted */
	/* Ids of the jobs a pass looks at: queued here (not a cluster's) or
	 * holding resources, in no order. Held and ended jobs are not in it,
	 * so they cost a pass nothing. Entries are added when a transaction
	 * commits (and at load), and one whose job no longer qualifies is
	 * dropped at each pass; job->in_live says a job is listed. */
	int64_t *live;
	size_t nlive, live_cap;
	/* Some job's dependencies may have become impossible outside the
	 * cascade queue (set at load and by commits): the pass looks. */
	bool deps_dirty;
	uint64_t commits;		/* committed changes a pass reads (txn.c, pass.c) */
	struct last_pass {		/* what the last pass saw (pass.c) */
		bool valid;
		uint64_t commits;
		size_t ngpus;
		struct sched_gpu gpus[GFLOW_MAX_GPUS];
		int64_t mem_total_mb;
		int cpus_total;
		double at, due;
	} last_pass;
	struct est_cache {		/* expected starts (pass.c: jobs_expected) */
		bool valid;
		uint64_t commits;
		double at;
		struct sched_estimate *v;	/* by id */
		size_t n;
	} est;

	/* The transaction in progress (txn.c): a snapshot of every job changed
	 * in place, restored if the store refuses the change. */
	struct {
		bool open, failed;
		uint64_t seq;
		struct gf_err err;		/* the first store error, when failed */
		struct undo *undo;
		size_t nundo, undo_cap;
		int64_t max_id;
		size_t nopen, cq_head, cq_len;
	} txn;

	/* Dependency cascades (cascade.c): jobs to check, worked through in
	 * time-bounded slices, each slice its own transaction; and the
	 * requests that wait for theirs to finish. */
	struct cascade_item *cq;
	size_t cq_head, cq_len, cq_cap;
	struct event *cq_ev;		/* the next slice */
	bool cq_failing;
	struct cascade_wait *cwaits;

	/* API */
	struct evhttp *http_unix, *http_tcp;
	struct evhttp_bound_socket *bound_unix, *bound_tcp;	/* bound_tcp NULL: no TCP */
	char tcp_note[300];		/* why there is no TCP, said at start */
	int unix_fd;
	int sock_lock_fd;		/* flock on paths.socket_lock: the socket is ours */
	int inherited[4];		/* unix, tcp, lock, socket lock; -1 when not inherited */
	int rollback_fd;		/* --rollback, until we are up */

	/* Scheduling */
	struct event *sched_ev;		/* coalesced pass, made active on events */
	struct hooks hooks;		/* events up the layers (hooks.h) */
	struct guard *guard;		/* the API's connection guard (api/api_listen.c) */
	struct event *begin_ev;		/* next begin time */
	uint64_t sched_seed;
	enum sched_strategy strategy;
	bool starts_refused;		/* the store refused the last pass's starts */
	/* Starts recorded in a submission's own transaction (jobs_start_at_once),
	 * launched after its commit: job id and run_seq. */
	struct { int64_t id, run_seq; } *launch;
	size_t nlaunch, launch_cap;
	/* Runners that ended since the last pass: recorded together, with the
	 * starts they make room for, in the pass's one commit (jobs_end_later). */
	struct queued_end *ends;
	size_t nends, ends_cap;

	/* GPUs */
	struct gpu_poller *poller;
	int gpu_pipe[2];
	struct event *gpu_ev;
	struct gpu_snapshot snap;
	bool have_snap;
	uint64_t allowed_mask;		/* when !allowed_all */
	bool allowed_all;
	char allowed_source[64];
	struct ignored_proc *ignored;
	size_t nignored;
	pid_t *gpu_seen;		/* pids of the snapshot once seen alive here */
	uint64_t usage_seq;		/* the snapshot usage.c sampled last */
	uint64_t idle_seq;		/* the snapshot idle.c sampled last */
	struct idle_entry *idle;	/* idle clocks of running jobs (idle.c), by id */
	size_t nidle;
	bool sees_all_pids;		/* in the machine's initial pid namespace */
	long pid_max;			/* /proc/sys/kernel/pid_max */
	size_t ngpu_seen, gpu_seen_cap;
	struct gpu_view views[GFLOW_MAX_GPUS];
	size_t nviews;

	/* Runners */
/* Standby runners held at most: those made (up to 4, standby.c) and those
 * back from a job they served (reap.c's report section). */
#define GF_STANDBY_MAX 8
/* Run directories kept for reuse, at most (rundir.c): as many as jobs end
 * at once, so that none is removed (a freed inode slows every new one). */
#define GF_RECYCLED 4096
	struct pending *pending;		/* launched, not yet announced (reap.c) */
	struct tmuxctl *tmuxctl;		/* the tmux control client (tmuxctl.c), or NULL */
	/* The standby runners' sockets, pidfds and pids (standby.c), -1: none;
	 * a start takes the last. */
	int standby_fd[GF_STANDBY_MAX], standby_pidfd[GF_STANDBY_MAX];
	pid_t standby_pid[GF_STANDBY_MAX];
	int nstandby;				/* how many are kept (standby.c) */
	int standby_held_fd;			/* the pipe of a held start (standby.c), -1: none */
	bool start_held;			/* a launch now is held until jobs_txn_sync */
	bool standby_due, spares_due;		/* what standby_ev makes (standby.c) */
	bool tsb_due;				/* …and the tmux executor's standby */
	unsigned tsb_seq;			/* names of the tmux standby's session and FIFO */
	char tsb_session[64], tsb_fifo[GF_PATH_MAX];	/* the tmux standby's, "": none */
	double tsb_made;			/* when (monotonic seconds) */
	struct event *standby_ev;		/* makes the next standby */
	struct tracker track;			/* each job's processes (track.c) */
	struct event *watch_ev;			/* the backstop's periodic check (backstop.c) */
	int64_t *pids_due;			/* jobs whose runner's pid is not stored yet (reap.c) */
	size_t npids_due, pids_due_cap;
	struct event *pids_ev;			/* stores them, a moment after the first */
	int run_dfd, log_dfd;			/* <data>/run and <data>/logs, opened once */
	uint64_t recycled[GF_RECYCLED / 64];	/* RUNDIR/.spare.K held for reuse: bit K (rundir.c) */
	int grace_secs;				/* between the signals of a cancel */
	int inotify_fd;
	struct event *inotify_ev;

	struct notify *notify;		/* notifications (notify.c), NULL when off */
	/* Fair use */
	struct quota_override *quota_ov;
	size_t nquota_ov;
	struct reservation *resvs;	/* by id, cancelled ones kept */
	size_t nresvs;
	struct user_usage *usage;
	size_t nusage;
	struct user_usage *usage_pending;	/* staged in the open transaction */
	size_t nusage_pending;
	struct recent_run *recent;		/* GPU runs ended in the last 24 h */
	size_t nrecent, recent_cap;
	struct recent_run *recent_pending;	/* staged with usage_pending, one per ended run */
	size_t nrecent_pending, recent_pending_cap;
	struct wait_note *notes;
	size_t nnotes;
	char **note_names;		/* quota subjects the notes name */
	size_t nnote_names;

	struct history history;		/* the dashboard's samples (history.c) */

	/* What /metrics reports besides the state (metrics.c): the
	 * scheduler-pass times, and the API-request times by method, route
	 * (the route table's pattern: never an id) and status. */
	struct {
		struct histogram sched;
		struct api_timing {
			const char *method, *route;	/* static strings */
			int status;
			struct histogram h;
		} *api;
		size_t napi, api_cap;
	} metrics;

	struct event *sig_term, *sig_int, *sig_reload;
	bool reloading;			/* draining: listeners paused, answers close */
	struct reload *reload;
};

/* fds.c: descriptors under pressure. fd_limit_raise: soft RLIMIT_NOFILE
 * to the hard one, and fd_room's probe opened (at start). fd_limit: the soft limit. fd_room: can a
 * job's start or end open what it needs now (else it waits and retries)?
 * fd_short: is err EMFILE or ENFILE? fd_note: a line on stderr, at most
 * one a second (the rest counted into the next). fd_retry_pass: a
 * scheduler pass in a second. */
void fd_limit_raise(void);
long fd_limit(void);
bool fd_room(void);
bool fd_short(int err);
void fd_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fd_retry_pass(struct server *s);

/* table.c — the job table, and the questions asked of it */
struct job *jobs_get(struct server *s, int64_t id);
#define JOBS_SINCE_BLOCK 1024
/* The first id from id on that a walk of the jobs submitted at or after t
 * must look at (max_id + 1: none); every id it passes over was submitted
 * before t. A walk calls it at its first id and at each block's first. */
int64_t jobs_since_next(const struct server *s, double t, int64_t id);
int jobs_add(struct server *s, struct job *j);	/* takes ownership */
void jobs_reserve_ids(struct server *s, int64_t id);	/* room in the table for ids up to id */
/* The i-th entry of the open list, or NULL when that job has closed. */
struct job *jobs_open_at(struct server *s, size_t i);
/* The i-th entry of the live list (i < s->nlive), or NULL when that job is
 * neither queued nor holding resources any more. */
struct job *jobs_live_at(struct server *s, size_t i);
/* The same entry when that job holds resources (active: every Running job
 * of ours is), else NULL. Walks over what runs take this list (i <
 * s->nlive), not the open one, which also holds every held job. */
struct job *jobs_active_at(struct server *s, size_t i);
/* After a commit: list j as live if it now is; note what the pass must
 * look at again. */
void jobs_committed(struct server *s, struct job *j, const struct job *before);
/* Queued here (not on a cluster) or holding resources: what the live list holds. */
bool jobs_is_live(const struct job *j);
void jobs_live_note(struct server *s, struct job *j);	/* list j as live if it is */
/* Drop closed jobs from the open list and gone ones from the live list
 * (outside transactions: a rollback finds the lists as they were). */
void jobs_compact(struct server *s);
/* Resolve "@"/"@~N"/"42" for uid. Returns id or -1 with e set. */
int64_t jobs_resolve_ref(struct server *s, uid_t uid, const char *ref, struct gf_err *e);
void jobs_log_path(struct server *s, const struct job *j, char *buf, size_t size);
/* The file name of a job's log: ID.log, or ID.SEQ.log for seq > 0 (that
 * name was taken; runfile.h). jobs_log_path: in its directory, with the
 * job's own seq (job_more's log_seq). */
void jobs_log_name(const struct job *j, int64_t seq, char *buf, size_t size);
/* Called once a cancel's cascade is worked through; err is set when the
 * rest of it could not be recorded now (it is tried again later). */
typedef void (*jobs_done_cb)(struct server *s, void *arg, const char *err);
/* Ids of the jobs whose store rows could not be read (shown as stand-ins). */
size_t jobs_unreadable(struct server *s, int64_t *ids, size_t max);
/* How a job's priority counts across users (table.c; sched.h). */
int jobs_cross_priority(const struct server *s, const struct job *j);
/* Why a queued job may not start now (NULL: eligible). */
const char *jobs_blocked_reason(struct server *s, const struct job *j, double now);
/* The newest attempt of a job that was retried (the job itself otherwise). */
int64_t jobs_latest_attempt(struct server *s, int64_t id);
/* Would job `id` depending on deps[] close a cycle? */
bool jobs_would_cycle(struct server *s, int64_t id, const int64_t *deps, size_t ndeps);
/* j's dependencies: 1 met, 0 still possible, -1 can never be met (then
 * *culprit, when given and 0, is the first listed parent that failed). */
int jobs_deps_state(struct server *s, const struct job *j, int64_t *culprit);
/* j ends now in state st, for reason (may be NULL). */
void jobs_end_now(struct job *j, enum job_state st, const char *reason);

/* deps.c — the dependents index, sets of ids, the cascade queue's data (worked through by engine/cascade.c) */
/* Does c list parent in its depends_on? (Index entries are never removed:
 * check this before trusting one.) */
bool cascade_lists(const struct job *c, int64_t parent);
void cascade_add_dependent(struct job *p, int64_t id);	/* id depends on p */
void cascade_index_deps(struct server *s, const struct job *c);	/* c under each parent */
/* A set of job ids, one bit each (free it); idset_add is false when id was
 * there already or is not a job id. */
uint8_t *idset_new(struct server *s);
bool idset_add(struct server *s, uint8_t *v, int64_t id);
/* A growing list of ids (free v). */
struct idvec {
	int64_t *v;
	size_t n, cap;
};
void idvec_add(struct idvec *l, int64_t id);
struct cascade_wait;		/* a request waiting for its cascade */
/* done is called once the cascade of the open transaction is through; the
 * wait is dropped, done uncalled, if that transaction is rolled back. */
struct cascade_wait *cascade_wait_new(struct server *s, jobs_done_cb done, void *arg);
/* Queue job id to be checked (parent: the job that ended, or 0). */
void cascade_push(struct server *s, int64_t id, int64_t parent, struct cascade_wait *origin);
/* Is c one a cascade may cancel (queued or held, auto-cancel, with deps)? */
bool cascade_may_cancel(const struct job *c);
/* p ended badly: queue the jobs that wait for it. */
void cascade_push_dependents(struct server *s, const struct job *p, struct cascade_wait *origin);
/* A transaction begins: remember where the queue is (txn.c). */
void cascade_mark(struct server *s);
/* It was rolled back: the queue goes back to the mark, the waits the
 * transaction made go, the others count what is in the queue again. */
void cascade_rollback(struct server *s);
/* Jobs cancelled because one of ids ended (DependencyFailed:<id>, and so on
 * down), breadth first, each once; appended to *out. */
void jobs_failed_because(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout);
/* Queued or held jobs that cancelling ids would cancel with them. */
void jobs_would_cascade(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout);

#endif
