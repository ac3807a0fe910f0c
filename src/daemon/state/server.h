/* server.h — the daemon's one state object and the functions each daemon
 * file exports. All daemon state lives in `struct server`; everything runs
 * on its single libevent loop (only the NVML poller, gpu.c, and the notification
 * workers, notify.c, have threads of their own). */
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
#include "hooks.h"
#include "job.h"
#include "notify.h"
#include "paths.h"
#include "runfile.h"
#include "sched.h"
#include "store.h"

#define GFLOW_MAX_GPUS 64

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
struct foreign_proc {
	pid_t pid;
	uint64_t used_mb;		/* 0 when NVML cannot tell */
	bool visible;			/* the pid exists in this pid namespace */
	bool ignored;			/* gctl gpu-process ignore */
	bool blocks;			/* makes its GPU unavailable */
	const char *exempt;		/* why it does not block (policy), else NULL */
	bool have_uid;
	uid_t uid;
	char user[64];
	char cmd[32];			/* /proc/<pid>/comm */
	int64_t age_secs;		/* -1 unknown */
};

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
enum note_kind { NOTE_QUOTA, NOTE_RESERVATION, NOTE_GROUP, NOTE_RESOURCES };
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

	/* Jobs, indexed by id (ids are dense from 1). */
	struct job **jobs;
	int64_t njobs_cap;
	int64_t max_id;
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
	uint64_t commits;		/* committed changes a pass reads (txn.c, jobs.c) */
	struct last_pass {		/* what the last pass saw (jobs.c) */
		bool valid;
		uint64_t commits;
		size_t ngpus;
		struct sched_gpu gpus[GFLOW_MAX_GPUS];
		int64_t mem_total_mb;
		double at, due;
	} last_pass;

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
	bool sees_all_pids;		/* in the machine's initial pid namespace */
	long pid_max;			/* /proc/sys/kernel/pid_max */
	size_t ngpu_seen, gpu_seen_cap;
	struct gpu_view views[GFLOW_MAX_GPUS];
	size_t nviews;

	/* Runners */
	struct pending *pending;		/* launched, not yet announced (reap.c) */
	struct tmuxctl *tmuxctl;		/* the tmux control client (tmuxctl.c), or NULL */
	int standby_fd, standby_pidfd;		/* the standby runner's pipe and pidfd (standby.c), -1: none */
	int standby_held_fd;			/* the pipe of a held start (standby.c), -1: none */
	bool start_held;			/* a launch now is held until jobs_txn_sync */
	bool standby_due, spares_due;		/* what standby_ev makes (standby.c) */
	bool tsb_due;				/* …and the tmux executor's standby */
	unsigned tsb_seq;			/* names of the tmux standby's session and FIFO */
	char tsb_session[64], tsb_fifo[GF_PATH_MAX];	/* the tmux standby's, "": none */
	double tsb_made;			/* when (monotonic seconds) */
	struct event *standby_ev;		/* makes the next standby */
	struct tracker track;			/* each job's processes (track.c) */
	struct event *watch_ev;			/* the backstop's periodic check (reap.c) */
	int run_dfd, log_dfd;			/* <data>/run and <data>/logs, opened once */
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
	struct recent_run recent_pending;	/* staged with usage_pending */
	bool have_recent_pending;
	struct wait_note *notes;
	size_t nnotes;
	char **note_names;		/* quota subjects the notes name */
	size_t nnote_names;

	struct history history;		/* the dashboard's samples (history.c) */

	/* What /metrics reports besides the state (metrics.c). */
	struct {
		struct histogram sched, api;
	} metrics;

	struct event *sig_term, *sig_int, *sig_reload;
	bool reloading;			/* draining: listeners paused, answers close */
	struct reload *reload;
};

/* loop.c */
int server_run(const struct daemon_opts *opts);
/* What a start can know before it takes anything over: the config (file
 * and the GFLOW_* variables of envp), the options, the runner. cfg is
 * filled (free it) on success. */
int server_check(const struct daemon_opts *o, char *const *envp, struct gf_config *cfg, struct gf_err *e);

/* api_listen.c (api_check_request: api_decode.c) */
int api_init(struct server *s, struct gf_err *e);
void api_close(struct server *s);
/* Decode and check a POST /jobs body as the API would, storing nothing
 * (the fuzz target's way in). */
int api_check_request(struct server *s, uid_t uid, const char *data, size_t len, struct gf_err *e);
/* Stop accepting (new connections wait in the backlog); api_resume undoes
 * it. While s->reloading, every answer says "Connection: close". */
void api_pause(struct server *s);
void api_resume(struct server *s);
/* Connections accepted and not yet closed. */
int api_open_connections(struct server *s);
/* A listening TCP socket on host:port (close-on-exec), or -1 with e set. */
int api_listen_tcp(const char *host, int port, struct gf_err *e);
/* The listening fds, for a reload. */
int api_fds(struct server *s, int *unix_fd, int *tcp_fd);

/* fds.c: descriptors under pressure. fd_limit_raise: soft RLIMIT_NOFILE
 * to the hard one (at start). fd_limit: the soft limit. fd_room: can a
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

/* api_remote.c: POST /remote/jobs and /remote/update (jobs on a Slurm
 * cluster, recorded for their owner's client; `what` is the path after
 * "/remote/"). */
void api_remote(struct server *s, struct evhttp_request *req, uid_t uid, bool admin,
		const char *what, json_t *body);
/* api_decode.c's field checks, for api_remote.c: unknown fields, a printable
 * text field, an integer field in [min,max] (absent or null: left alone). */
int api_check_fields(json_t *o, const char *const *allowed, const char *what, struct gf_err *e);
int api_check_text(const char *k, json_t *v, size_t max, struct gf_err *e);
int api_get_str(json_t *o, const char *k, size_t max, char **out, struct gf_err *e);
int api_get_int(json_t *o, const char *k, int64_t min, int64_t max, int64_t *out, struct gf_err *e);

/* jobs.c — the state machine */
struct job *jobs_get(struct server *s, int64_t id);
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
/* The i-th change of the open transaction, when it added a job (NULL
 * otherwise); i < s->txn.nundo. */
struct job *jobs_txn_added_at(struct server *s, size_t i);
/* After a commit: list j as live if it now is; note what the pass must
 * look at again. */
void jobs_committed(struct server *s, struct job *j, const struct job *before);
/* Queued here (not on a cluster) or holding resources: what the live list holds. */
bool jobs_is_live(const struct job *j);
void jobs_live_note(struct server *s, struct job *j);	/* list j as live if it is */
/* Drop closed jobs from the open list and gone ones from the live list
 * (outside transactions: a rollback finds the lists as they were). */
void jobs_compact(struct server *s);
int jobs_load(struct server *s, struct gf_err *e);
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
/* Ids of the jobs whose store rows could not be read (shown as stand-ins). */
size_t jobs_unreadable(struct server *s, int64_t *ids, size_t max);
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
/* submit.c: store a submission's n jobs (taken: jobs[i] set to NULL) with
 * their environment in one transaction, ids[i] their ids; what can start
 * at once is recorded as started. *launch_after: launch it with
 * jobs_launch_recorded once the answer is on its way. -1: nothing stored. */
int jobs_submit(struct server *s, struct job **jobs, size_t n, const char *env, size_t envlen, int64_t *ids,
		bool *launch_after, struct gf_err *e);
/* How a job's priority counts across users (jobs.c; sched.h). */
int jobs_cross_priority(const struct server *s, const struct job *j);
/* Why a queued job may not start now (NULL: eligible). */
const char *jobs_blocked_reason(struct server *s, const struct job *j, double now);
/* The newest attempt of a job that was retried (the job itself otherwise). */
int64_t jobs_latest_attempt(struct server *s, int64_t id);
/* Would job `id` depending on deps[] close a cycle? */
bool jobs_would_cycle(struct server *s, int64_t id, const int64_t *deps, size_t ndeps);
/* Can the machine ever run this job? -1 with e set when it cannot. */
int jobs_check_feasible(struct server *s, const struct job *j, struct gf_err *e);
/* j's dependencies: 1 met, 0 still possible, -1 can never be met (then
 * *culprit, when given and 0, is the first listed parent that failed). */
int jobs_deps_state(struct server *s, const struct job *j, int64_t *culprit);
/* j ends now in state st, for reason (may be NULL). */
void jobs_end_now(struct job *j, enum job_state st, const char *reason);

/* txn.c — store transactions. Every change to jobs goes through one. A job
 * is changed in place after jobs_touch(); when the store refuses the change
 * (a failed jobs_save or commit, or jobs_txn_rollback) every touched job
 * gets back what it had, added jobs go away, and the first store error is
 * what jobs_txn_commit reports. One transaction at a time. */
int jobs_txn_begin(struct server *s, struct gf_err *e);
void jobs_touch(struct server *s, struct job *j);
int jobs_save(struct server *s, struct job *j, struct gf_err *e);
/* Store a new job and add it to the table (ids from the store); takes j. */
int jobs_insert(struct server *s, struct job *j, struct gf_err *e);
/* j takes n's stored fields (an edit), keeping its own runtime ones; frees n. */
int jobs_replace(struct server *s, struct job *j, struct job *n, struct gf_err *e);
int jobs_txn_commit(struct server *s, struct gf_err *e);
void jobs_txn_rollback(struct server *s);
/* A transaction whose commit is synced by jobs_txn_sync (store.h's
 * store_begin_sync_later): between the two only a held start may be handed
 * to the standby (standby_hand), nothing answered; standby_release lets
 * it go after. A sync that fails stops the daemon. */
int jobs_txn_begin_sync_later(struct server *s, struct gf_err *e);
void jobs_txn_sync(struct server *s);

/* cascade.c — the dependents index and dependency cascades */
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
/* Inside a transaction: work through the queue for at most one slice. */
void cascade_work(struct server *s);
/* After a commit: answer the requests whose cascade is through, go on with
 * the rest in a later loop turn. */
void cascade_after(struct server *s);
/* A transaction begins: remember where the queue is (txn.c). */
void cascade_mark(struct server *s);
/* It was rolled back: the queue goes back to the mark, the waits the
 * transaction made go, the others count what is in the queue again. */
void cascade_rollback(struct server *s);
/* One slice of the queue, in its own transaction. */
void cascade_slice(struct server *s);
/* Jobs cancelled because one of ids ended (DependencyFailed:<id>, and so on
 * down), breadth first, each once; appended to *out. */
void jobs_failed_because(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout);
/* Queued or held jobs that cancelling ids would cancel with them. */
void jobs_would_cascade(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout);
/* At shutdown: answer requests waiting for a cascade, free the queue. */
void jobs_close(struct server *s);

/* foreign.c — foreign GPU processes named, and the [gpu] policy */
void foreign_describe(pid_t pid, uint64_t used_mb, bool visible, struct foreign_proc *f);
void foreign_apply_policy(const struct gf_config *cfg, struct foreign_proc *f);
void foreign_label(const struct foreign_proc *f, char *buf, size_t size);	/* "pid=… user=… cmd=… age=… mem=…" */
json_t *foreign_json(const struct foreign_proc *f);

/* usage.c — what each job really used on its GPUs */
void usage_start(struct server *s, struct job *j);	/* at start, in its transaction: GPU UUIDs */
void usage_clear(struct job *j);
/* After a new snapshot: each running job's GPU memory (by its processes)
 * and utilisation, recorded in one transaction; shared overuse flagged and
 * handled as [gpu] shared_overuse says. */
void usage_sample(struct server *s);

/* failure.c — a Failed job with no reason yet: OutOfMemory:GPU (its log's
 * tail), Signal:<name> */
void failure_classify(struct server *s, struct job *j, const struct job_result *r);

/* devices.c — [gpu] constrain_devices: what a job may open */
#define NVIDIA_MAJOR 195
/* Write the job's rules into its v1 devices group dir: every /dev/nvidiaN
 * but its own GPUs' is denied (nvidiactl, nvidia-modeset and nvidia-uvm
 * stay allowed). */
int devices_restrict(struct server *s, const struct job *j, const char *dir, struct gf_err *e);
/* CUDA_VISIBLE_DEVICES for the units in mask: NVML indices, and MIG-<uuid>
 * for MIG devices (from the last snapshot). */
void devices_cuda_visible(struct server *s, uint64_t mask, char *buf, size_t size);

/* exec.c — the one place that starts processes */
int exec_init(struct server *s, struct gf_err *e);	/* opens the run and log directories */
void exec_close(struct server *s);
/* System mode: a user's home (passwd); whether they may enter cwd and read
 * script (checked as them, in a child), else e says what they cannot. */
int exec_owner_home(uid_t uid, char *home, size_t size, struct gf_err *e);
int exec_check_owner(uid_t uid, const char *cwd, const char *script, struct gf_err *e);
/* 0 its runner is started, 1 the start was handed to a standby runner
 * (which announces itself within moments), -1 e says why not. */
int exec_start_job(struct server *s, struct job *j, struct gf_err *e);
/* Would j's start go to the standby, and may it be held (jobs_txn_sync)? */
bool exec_holds_start(const struct server *s, const struct job *j);
void exec_reap(void);	/* collects runners that exited (they are our children) */
/* tmux.c: tmux and its server's socket; the words of a job's new-session
 * up to the `--` (trace: room for the trace's variable). */
struct argv;
int tmux_sock(const struct server *s, char *sock, size_t size, struct gf_err *e);
int tmux_server(struct server *s, char *tmux, size_t size, char *sock, size_t ssize, struct gf_err *e);
void tmux_new_session_words(struct argv *w, const char *session, char *trace, size_t size);
/* argv as our child, its stdin and stdout+stderr pipes to us (our ends
 * non-blocking, close-on-exec); from_child NULL: its output goes to ours. */
int exec_spawn_piped(char *const argv[], int *to_child, int *from_child, pid_t *pid, struct gf_err *e);

/* argv started, its stdout and stderr appended to log_path (NULL: ours);
 * waited for when wait_for_exit, its status then in *status. */
int exec_spawn(char *const argv[], const char *log_path, bool wait_for_exit, int *status,
	       struct gf_err *e);
/* A command for the daemon's tmux server, through the control client
 * only: 0 sent, 1 not. */
int exec_tmux_command(struct server *s, char *const words[], size_t nwords);
int exec_tmux_standby(struct server *s, const char *session, const char *fifo);
/* Makes a job's tmux session with a tmux client of its own: `tmux -S sock`
 * with words (from "new-session" on), tried again while the session does
 * not exist. */
int exec_tmux_client(const char *tmux, const char *sock, const char *session, char *const words[],
		     size_t nwords, struct gf_err *e);

/* rundir.c — a start's files: run directory, lists, log, spares, attach
 * socket. A list is NUL-separated words in a growing buffer. */
struct gf_bytes {
	char *p;
	size_t len, cap;
};
void rundir_path(struct server *s, const struct job *j, char *buf, size_t size);
/* The run directory, new (nothing there is reused or followed): its
 * descriptor, its path in dir; -1 e says why not. */
int rundir_make(struct server *s, const struct job *j, char *dir, size_t size, struct gf_err *e);
/* The log, new (a name that is taken is passed over: ID.1.log, …, told in
 * RUNDIR/logseq, dfd); only a job whose earlier start never ran finds its
 * own. Its path in path. */
int rundir_make_log(struct server *s, const struct job *j, int dfd, char *path, size_t size, struct gf_err *e);
/* The job's environment (what it was submitted with, less gflow's own
 * variables, and gflow's) and command (conda's activation first). */
int rundir_env(struct server *s, const struct job *j, struct gf_bytes *out, struct gf_err *e);
struct gf_bytes rundir_argv(const struct job *j);
/* What the runner needs of the job that its command line must not show
 * (cwd, log): NAME=value entries. */
struct gf_bytes rundir_spec(const struct job *j, const char *log, bool log_new);
/* RUNDIR/env, RUNDIR/argv and RUNDIR/spec, for a runner that reads them
 * from files. */
int rundir_write_lists(int dfd, const char *dir, const struct gf_bytes *env, const struct gf_bytes *argv,
		       const struct gf_bytes *spec, struct gf_err *e);
/* RUNDIR/limits: the submitter's resource limits, which the runner sets on
 * the job (every runner reads it; none when the job has none). */
int rundir_write_limits(int dfd, const char *dir, const struct job *j, struct gf_err *e);
void rundir_remove(struct server *s, const struct job *j);
/* A start's run directory and log, made ahead (see rundir.c). */
void rundir_make_spares(struct server *s);
/* System mode, tmux executor: the job's attach socket (false: it has none). */
bool rundir_attach_socket(struct server *s, const struct job *j, char *buf, size_t size);
/* Its directory made (root's, 0711) and a stale socket removed. */
int rundir_attach_prepare(struct server *s, const struct job *j, char *sock, size_t size, struct gf_err *e);

/* tmuxctl.c: the tmux executor's control client. Sends the same words for
 * j: 0 sent, 1 when the client cannot be used (exec_tmux_client then). */
int tmuxctl_new_session(struct server *s, const struct job *j, const char *tmux, const char *sock,
			const char *session, char *const words[], size_t nwords);
/* Any other command through the client: 0 sent (an error answer is
 * logged), 1 the client cannot be used. */
int tmuxctl_command(struct server *s, const char *tmux, const char *sock, char *const words[], size_t nwords);
void tmuxctl_close(struct server *s);
/* standby.c: the standby runner. standby_hand gives it a runner's argv
 * (argv[0] the runner) and after it the bytes of more (what the options
 * say follows): 0 handed, 1 there is none or it could not take it
 * (start a runner then). hold: the job waits before its exec until
 * standby_release (after the commit that started it is synced); EOF instead
 * — we stopped — and the runner gives the start up. standby_want makes one
 * in a moment unless there is one. */
struct iovec;
int standby_hand(struct server *s, char *const argv[], const struct iovec *more, int nmore, bool hold);
bool standby_ready(const struct server *s);
void standby_release(struct server *s);
/* The run directory and log spares (rundir.c) are made again in a moment. */
void standby_want_spares(struct server *s);
/* The tmux executor's standby: a session whose runner waits for its
 * request on a FIFO. standby_hand_tmux hands it j's start as standby_hand
 * does and renames its session to j's; 1 when there is none (yet). */
void standby_want_tmux(struct server *s);
int standby_hand_tmux(struct server *s, const struct job *j, char *const argv[], const struct iovec *more, int nmore,
		      bool hold);
bool standby_tmux_ready(const struct server *s);
void standby_want(struct server *s);
void standby_close(struct server *s);

/* reap.c — watching runners, and the backstop when one dies or stops */
int reap_init(struct server *s, struct gf_err *e);
void reap_watch_start(struct server *s, struct job *j, bool standby);	/* after exec */
/* The runner of a job launched will not come (tmuxctl.c): the run
 * directory claimed, the end recorded with why. */
void reap_start_failed(struct server *s, struct job *j, const char *why);
/* A start undone before anything ran (no descriptors for it): the job
 * queues again. */
void reap_start_undo(struct server *s, struct job *j);
int reap_recover(struct server *s, struct gf_err *e);	/* at daemon start */
int reap_signal(struct server *s, struct job *j, int sig);
void reap_forget(struct server *s, struct job *j);
void reap_close(struct server *s);			/* at shutdown */

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

/* auth.c — callers, roles and per-user tokens */
int auth_setup(struct server *s, struct gf_err *e);	/* after the store is open */
void auth_close(struct server *s);
bool auth_is_admin(struct server *s, uid_t uid);
/* May this caller see all of job j (command, directory, log)? */
bool auth_sees_all(struct server *s, const struct job *j, uid_t uid, bool admin);
/* The user a token belongs to; false when it is nobody's. */
bool auth_token_user(struct server *s, const char *token, uid_t *uid);
/* A user's token, made (and stored) on first use. */
int auth_token_get(struct server *s, uid_t uid, char *out, size_t size, struct gf_err *e);
int auth_token_revoke(struct server *s, uid_t uid, bool *had, struct gf_err *e);

/* track.c — each job's processes, known to the daemon itself */
int track_setup(struct server *s, struct gf_err *e);	/* before any thread starts */
void track_close(struct server *s);
const char *track_method_name(const struct server *s);
json_t *track_json(struct server *s);
/* "GFLOW_JOB_MARK=…" for this start: put in the job's environment. */
void track_marker(struct server *s, const struct job *j, char *buf, size_t size);
/* Make this start's groups; fills paths (the runner joins them). Returns
 * their count, or (size_t)-1 with e set. */
size_t track_prepare(struct server *s, const struct job *j, char paths[][GF_PATH_MAX], struct gf_err *e);
size_t track_pids(struct server *s, const struct job *j, pid_t **out);	/* malloc'd */
bool track_empty(struct server *s, const struct job *j);
void track_kill(struct server *s, const struct job *j);	/* SIGKILL all that is left */
void track_release(struct server *s, const struct job *j);	/* remove its groups */
struct job *track_owner(struct server *s, pid_t pid);	/* the active job of a process */
void track_observe(struct server *s);	/* session way: remember what is seen */

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

/* usage.c — decayed GPU-seconds per user (fair share) */
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

/* api.c's answers, for the other route files */
void api_reply(struct evhttp_request *req, int code, json_t *body);
struct jsonw;
/* Answers with what w holds (one JSON document) and takes its buffer. */
void api_reply_jw(struct evhttp_request *req, int code, struct jsonw *w);
__attribute__((format(printf, 3, 4))) void api_reply_err(struct evhttp_request *req, int code, const char *fmt, ...);
void api_reply_store_err(struct server *s, struct evhttp_request *req, const struct gf_err *e);

/* api_share.c — routes of /quotas, /reservations, /usage: anyone reads,
 * admins change */
void api_share_get(struct server *s, struct evhttp_request *req, const char *path);
/* The changes, for admins (the route table, api.c, checks who asks). */
void api_share_quota_set(struct server *s, struct evhttp_request *req, json_t *body, bool remove);
void api_share_resv_create(struct server *s, struct evhttp_request *req, json_t *body);
void api_share_resv_cancel(struct server *s, struct evhttp_request *req, json_t *body);
bool api_share_path(const char *path);

/* metrics.c — GET /metrics, and the timings it reports */
void metrics_get(struct server *s, struct evhttp_request *req);
double metrics_clock(void);	/* monotonic seconds */
void metrics_observe(struct histogram *h, double secs);

/* joblog.c — GET /jobs/<id>/log (rest: "<id>/log"), for the job's owner or an admin */
void joblog_get(struct server *s, struct evhttp_request *req, uid_t uid, bool admin, const char *rest);

/* history.c — the dashboard's history ring and GET /history */
int history_init(struct server *s, struct gf_err *e);	/* after the store and the loop */
void history_close(struct server *s);
json_t *history_json(struct server *s);	/* GET /history's answer */

/* web.c — the dashboard's files: GET / and /ui/<file> */
void web_get(struct server *s, struct evhttp_request *req, const char *path);

/* util */
int64_t meminfo_total_mb(void);

#endif
